// Nucleus playground: streams a generation with `trace_steps` and draws each token's sampling
// step. Plain browser JavaScript, no framework, nothing loaded from elsewhere.
'use strict';

// llama.cpp's sampling fields with its defaults (common_params_sampling) and the ranges the
// server accepts. The server checks every value; its error text is what the page shows.
const FIELDS = [
  { name: 'temperature', def: 0.8, step: 0.05, range: '0 – 2' },
  { name: 'top_k', def: 40, int: true, range: '≤ 0: off' },
  { name: 'top_p', def: 0.95, step: 0.01, range: '0 – 1, 1: off' },
  { name: 'min_p', def: 0.05, step: 0.01, range: '0 – 1, 0: off' },
  { name: 'typical_p', def: 1.0, step: 0.01, range: '0 – 1, 1: off' },
  { name: 'top_n_sigma', def: -1, step: 0.1, range: '≤ 0: off' },
  { name: 'xtc_probability', def: 0, step: 0.05, range: '0 – 1, 0: off' },
  { name: 'xtc_threshold', def: 0.1, step: 0.05, range: '0 – 1' },
  { name: 'repeat_penalty', def: 1.0, step: 0.05, range: '> 0, 1: off' },
  { name: 'repeat_last_n', def: 64, int: true, range: '≥ 0' },
  { name: 'presence_penalty', def: 0, step: 0.1, range: '-2 – 2' },
  { name: 'frequency_penalty', def: 0, step: 0.1, range: '-2 – 2' },
  { name: 'dry_multiplier', def: 0, step: 0.1, range: '≥ 0, 0: off' },
  { name: 'dry_base', def: 1.75, step: 0.05, range: '> 1' },
  { name: 'dry_allowed_length', def: 2, int: true, range: '≥ 0' },
  { name: 'dry_penalty_last_n', def: 64, int: true, range: '≥ 0' },
  { name: 'dry_sequence_breakers', def: '["\\n", ":", "\\"", "*"]', json: true, wide: true, range: 'JSON array of strings' },
  { name: 'mirostat', def: 0, choices: [0, 1, 2], range: '0 off, 1, 2' },
  { name: 'mirostat_tau', def: 5.0, step: 0.5, range: '≥ 0' },
  { name: 'mirostat_eta', def: 0.1, step: 0.05, range: '≥ 0' },
  { name: 'dynatemp_range', def: 0, step: 0.1, range: '≥ 0, 0: off' },
  { name: 'dynatemp_exponent', def: 1.0, step: 0.1, range: '≥ 0' },
  { name: 'adaptive_target', def: -1, step: 0.05, range: '≤ 1, < 0: off' },
  { name: 'adaptive_decay', def: 0.9, step: 0.01, range: '0 – 0.99' },
  { name: 'min_keep', def: 0, int: true, range: '≥ 0' },
  { name: 'ignore_eos', def: false, bool: true, range: '' },
  { name: 'logit_bias', def: '{}', json: true, wide: true, range: 'JSON: {"token id or text": bias}' },
  { name: 'seed', def: -1, int: true, range: '-1: random (the page picks one)' },
  { name: 'max_tokens', def: 64, int: true, range: '≥ 1' },
  { name: 'trace_steps', def: 10, int: true, range: 'candidates shown, 1 – 64' },
];
const DEFAULT_ORDER = ['penalties', 'dry', 'top_n_sigma', 'top_k', 'typ_p', 'top_p', 'min_p', 'xtc', 'temperature'];
const EXTRA_SAMPLERS = ['infill', 'adaptive_p'];

const $ = (id) => document.getElementById(id);
const els = {
  output: $('output'), step: $('step'), error: $('error'), divergence: $('divergence'),
  generate: $('generate'), regenerate: $('regenerate'), stop: $('stop'), tint: $('tint'),
  fields: $('fields'), order: $('order'), constraint: $('constraint'), constraintError: $('constraint-error'),
  server: $('server'), legend: $('legend'), runInfo: $('run-info'), apiKey: $('api-key'),
};

// ---- Sampler panel -------------------------------------------------------------------------

function buildFields() {
  els.fields.textContent = '';
  for (const f of FIELDS) {
    const wrap = document.createElement('div');
    wrap.className = 'field' + (f.wide ? ' wide' : '');
    wrap.dataset.field = f.name;
    const label = document.createElement('label');
    label.htmlFor = 'f-' + f.name;
    label.textContent = f.name + ' ';
    const range = document.createElement('span');
    range.className = 'range';
    range.textContent = f.range;
    label.appendChild(range);
    let input;
    if (f.choices) {
      input = document.createElement('select');
      for (const c of f.choices) {
        const o = document.createElement('option');
        o.value = String(c);
        o.textContent = String(c);
        input.appendChild(o);
      }
    } else if (f.bool) {
      input = document.createElement('input');
      input.type = 'checkbox';
    } else {
      input = document.createElement('input');
      input.type = f.json ? 'text' : 'number';
      if (!f.json) input.step = f.int ? '1' : String(f.step || 'any');
    }
    input.id = 'f-' + f.name;
    input.addEventListener('input', () => wrap.classList.remove('bad'));
    wrap.append(label, input);
    els.fields.appendChild(wrap);
  }
  resetFields();
}

function resetFields() {
  for (const f of FIELDS) {
    const input = $('f-' + f.name);
    if (f.bool) input.checked = f.def;
    else input.value = String(f.def);
  }
  buildOrder(DEFAULT_ORDER.map((n) => [n, true]).concat(EXTRA_SAMPLERS.map((n) => [n, false])));
}

function buildOrder(items) {
  els.order.textContent = '';
  for (const [name, on] of items) {
    const li = document.createElement('li');
    li.tabIndex = 0;
    li.dataset.sampler = name;
    li.className = on ? '' : 'off';
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.checked = on;
    box.setAttribute('aria-label', 'use ' + name);
    box.addEventListener('change', () => li.classList.toggle('off', !box.checked));
    const span = document.createElement('span');
    span.className = 'name';
    span.textContent = name;
    const up = smallButton('↑', 'move ' + name + ' up', () => move(li, -1));
    const down = smallButton('↓', 'move ' + name + ' down', () => move(li, 1));
    li.append(box, span, up, down);
    li.addEventListener('keydown', (e) => {
      if (e.altKey && (e.key === 'ArrowUp' || e.key === 'ArrowDown')) {
        e.preventDefault();
        move(li, e.key === 'ArrowUp' ? -1 : 1);
      }
    });
    els.order.appendChild(li);
  }
}

function smallButton(text, label, onClick) {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = 'small';
  b.textContent = text;
  b.setAttribute('aria-label', label);
  b.addEventListener('click', onClick);
  return b;
}

function move(li, dir) {
  const sib = dir < 0 ? li.previousElementSibling : li.nextElementSibling;
  if (!sib) return;
  if (dir < 0) els.order.insertBefore(li, sib);
  else els.order.insertBefore(sib, li);
  li.focus();
}

function samplerOrder() {
  return [...els.order.children].filter((li) => li.querySelector('input').checked).map((li) => li.dataset.sampler);
}

/** The request fields from the panel; throws {param, message} for JSON that does not parse. */
function readFields() {
  const out = {};
  for (const f of FIELDS) {
    const input = $('f-' + f.name);
    if (f.bool) { out[f.name] = input.checked; continue; }
    const raw = input.value.trim();
    if (f.json) {
      try { out[f.name] = JSON.parse(raw); } catch (e) { throw { param: f.name, message: `'${f.name}' is not valid JSON: ${e.message}` }; }
      continue;
    }
    if (raw === '') continue; // absent: the server's default
    const n = Number(raw);
    // A value that is not a number goes to the server as text, so the error is the API's own.
    out[f.name] = Number.isFinite(n) ? n : raw;
  }
  out.samplers = samplerOrder();
  return out;
}

// ---- Constraint box ------------------------------------------------------------------------

function constraintKind() {
  return document.querySelector('input[name="constraint"]:checked').value;
}

const EXAMPLES = {
  gbnf: 'root ::= ("red" | "green" | "blue") ", " [a-z ]+ "."',
  schema: '{\n  "type": "object",\n  "properties": {"color": {"enum": ["red", "green", "blue"]}, "why": {"type": "string", "maxLength": 40}},\n  "required": ["color", "why"],\n  "additionalProperties": false\n}',
};

function onConstraintKind() {
  const k = constraintKind();
  els.constraint.disabled = k === 'none';
  if (k !== 'none' && (els.constraint.dataset.kind !== k)) {
    if (els.constraint.dataset.kind) els.constraint.value = EXAMPLES[k];
    els.constraint.dataset.kind = k;
  }
  hide(els.constraintError);
}

/** Line and column (1-based) of character `offset` in `text`. */
function lineCol(text, offset) {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return { line, col: offset - before.lastIndexOf('\n') };
}

/**
 * Where the JSON pointer named in a schema error (`at #/properties/a`) sits in the schema's
 * text: each key of the pointer is looked for after the previous one (array indices skipped),
 * which finds the place in any ordinary layout. Empty when there is no pointer.
 */
function pointerLineCol(message) {
  const m = /at #(\/[^\s:]*)/.exec(message);
  const text = els.constraint.value;
  if (!m) return {};
  let at = -1;
  for (const raw of m[1].split('/').slice(1)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (/^\d+$/.test(key)) continue;
    const i = text.indexOf(JSON.stringify(key), at + 1);
    if (i < 0) break;
    at = i;
  }
  return at < 0 ? {} : lineCol(text, at);
}

/** The error with the constraint's line `line` and a caret under column `col`. */
function showConstraintError(message, line, col) {
  const box = els.constraintError;
  box.textContent = message;
  const lines = els.constraint.value.split('\n');
  if (line && lines[line - 1] !== undefined) {
    const pre = document.createElement('pre');
    pre.textContent = `${String(line).padStart(3)} | ${lines[line - 1]}\n      ${' '.repeat(Math.max(0, (col || 1) - 1))}^`;
    box.appendChild(pre);
    // Put the cursor there too.
    let offset = 0;
    for (let i = 0; i < line - 1; i++) offset += lines[i].length + 1;
    const pos = offset + Math.max(0, (col || 1) - 1);
    els.constraint.setSelectionRange(pos, pos);
  }
  show(box);
}

function readConstraint(body) {
  const k = constraintKind();
  if (k === 'gbnf') body.grammar = els.constraint.value;
  if (k === 'schema') {
    try {
      body.json_schema = JSON.parse(els.constraint.value);
    } catch (e) {
      const m = /position (\d+)/.exec(e.message);
      const at = m ? lineCol(els.constraint.value, Number(m[1])) : {};
      throw { param: 'json_schema', message: `The schema is not valid JSON: ${e.message}`, line: at.line, col: at.col };
    }
  }
}

// ---- Errors ----------------------------------------------------------------------------------

function show(el) { el.hidden = false; }
function hide(el) { el.hidden = true; el.textContent = ''; }

function clearErrors() {
  hide(els.error);
  hide(els.constraintError);
  for (const w of els.fields.querySelectorAll('.bad')) w.classList.remove('bad');
}

/** Shows an API error (OpenAI shape) where it belongs: the constraint box, a field, or the top. */
function showError(err) {
  const param = err.param || '';
  const message = err.message || String(err);
  if (param === 'grammar' || param.startsWith('json_schema') || param.startsWith('response_format')) {
    const m = /line (\d+), column (\d+)/.exec(message);
    const at = m ? { line: Number(m[1]), col: Number(m[2]) } : pointerLineCol(message);
    showConstraintError(message, err.line || at.line, err.col || at.col);
    document.querySelector('details:has(#constraint)')?.setAttribute('open', '');
    return;
  }
  els.error.textContent = message;
  show(els.error);
  const field = els.fields.querySelector(`[data-field="${CSS.escape(param)}"]`) ||
    (param === 'samplers' ? els.order : null);
  if (field) {
    field.classList.add('bad');
    (field.querySelector('input, select') || field).focus?.();
  }
}

// ---- Generation ------------------------------------------------------------------------------

let runs = [];          // finished and current runs: {seed, settings, tokens: [step]}
let controller = null;  // AbortController of the running request
let selected = -1;

function mode() {
  return document.querySelector('input[name="mode"]:checked').value;
}

function headers() {
  const h = { 'Content-Type': 'application/json' };
  if (els.apiKey.value) h.Authorization = 'Bearer ' + els.apiKey.value;
  return h;
}

async function generate(sameSeed) {
  if (controller) return;
  clearErrors();
  let body;
  try {
    body = readFields();
    readConstraint(body);
  } catch (e) {
    showError(e);
    return;
  }
  const prev = runs[runs.length - 1];
  if (sameSeed && prev) body.seed = prev.seed;
  else if (body.seed === -1 || body.seed === undefined) body.seed = Math.floor(Math.random() * 0xfffffffe);
  body.stream = true;
  let url;
  if (mode() === 'chat') {
    url = 'v1/chat/completions';
    body.messages = [];
    const sys = $('system').value.trim();
    if (sys) body.messages.push({ role: 'system', content: sys });
    body.messages.push({ role: 'user', content: $('user').value });
  } else {
    url = 'v1/completions';
    body.prompt = $('prompt').value;
  }
  const run = { seed: body.seed, prompt: JSON.stringify(body.messages || body.prompt), tokens: [], decoder: new TextDecoder() };
  const compareWith = sameSeed && prev && prev.prompt === run.prompt ? prev : null;
  controller = new AbortController();
  setBusy(true);
  const started = performance.now();
  let finish = '';
  try {
    const resp = await fetch(url, { method: 'POST', headers: headers(), body: JSON.stringify(body), signal: controller.signal });
    if (!resp.ok) {
      // The previous run stays on the page; the error says what to fix.
      const j = await resp.json().catch(() => ({ error: { message: `HTTP ${resp.status}` } }));
      showError(j.error || { message: `HTTP ${resp.status}` });
      return;
    }
    els.output.textContent = '';
    hide(els.divergence);
    selected = -1;
    renderStep(null);
    els.runInfo.textContent = `seed ${run.seed} · generating…`;
    runs.push(run);
    if (runs.length > 2) runs.shift();
    const reader = resp.body.getReader();
    const utf8 = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += utf8.decode(value, { stream: true });
      let cut;
      while ((cut = buf.indexOf('\n\n')) >= 0) {
        const event = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        for (const line of event.split('\n')) {
          if (!line.startsWith('data: ')) continue;
          const data = line.slice(6);
          if (data === '[DONE]') continue;
          const chunk = JSON.parse(data);
          if (chunk.error) { showError(chunk.error); continue; }
          const choice = chunk.choices && chunk.choices[0];
          if (!choice) continue;
          for (const s of choice.steps || []) addToken(run, s, compareWith);
          if (choice.finish_reason) finish = choice.finish_reason;
        }
      }
    }
  } catch (e) {
    if (e.name !== 'AbortError') showError({ message: 'The request failed: ' + e.message });
    else finish = 'stopped';
  } finally {
    controller = null;
    setBusy(false);
  }
  if (runs[runs.length - 1] !== run) return; // refused: nothing new to show
  const secs = (performance.now() - started) / 1000;
  els.runInfo.textContent = `seed ${run.seed} · ${run.tokens.length} tokens in ${secs.toFixed(1)} s · finish: ${finish || '–'}`;
  if (sameSeed && prev && !compareWith) {
    els.divergence.textContent = 'The prompt changed since the previous run, so there is nothing to compare: Regenerate compares runs of the same prompt and seed.';
    els.divergence.dataset.divergence = 'prompt-changed';
    show(els.divergence);
  }
  if (compareWith) {
    showDivergence(run, compareWith);
    // Open the step where the texts part: its candidates say why.
    if (run.diverged) selectToken(run.diverged.index, false);
  }
  els.output.dataset.done = 'true';
}

function setBusy(busy) {
  els.generate.disabled = busy;
  els.regenerate.disabled = busy || runs.length === 0;
  els.stop.disabled = !busy;
  els.output.dataset.done = busy ? 'false' : 'true';
}

function addToken(run, s, compareWith) {
  const i = run.tokens.length;
  run.tokens.push(s);
  const span = document.createElement('span');
  span.className = 'tok';
  span.tabIndex = -1;
  span.setAttribute('role', 'option');
  span.dataset.index = String(i);
  let text = s.end ? '' : run.decoder.decode(new Uint8Array(s.bytes), { stream: true });
  if (s.end) { span.classList.add('end'); text = '⏹'; }
  // A piece of a character (its bytes complete later) still gets a clickable mark.
  span.textContent = text === '' ? '·' : text;
  span.title = describe(s);
  tintSpan(span, s);
  if (compareWith && !run.diverged) {
    const old = compareWith.tokens[i];
    if (!old || old.id !== s.id) {
      run.diverged = { index: i };
      span.classList.add('diverged');
    }
  } else if (run.diverged) {
    span.classList.add('after-divergence');
  }
  if (i === 0) span.tabIndex = 0;
  els.output.appendChild(span);
}

function describe(s) {
  const allowed = s.allowed != null ? ` · constraint allowed ${s.allowed}` : '';
  return `p ${fmt(s.p)} · after chain ${fmt(s.post_p)} · ${s.surprisal.toFixed(2)} bits${allowed}`;
}

function fmt(p) {
  if (p >= 0.01 || p === 0) return p.toFixed(3);
  return p.toExponential(1);
}

// ---- Tinting ---------------------------------------------------------------------------------

function tintSpan(span, s) {
  const how = els.tint.value;
  let t; // 0 = unremarkable, 1 = remarkable
  if (how === 'surprisal') t = Math.min(1, (isFinite(s.surprisal) ? s.surprisal : 16) / 12);
  else t = 1 - Math.max(0, Math.min(1, s[how]));
  span.style.backgroundColor = how === 'surprisal'
    ? `hsla(28, 95%, 55%, ${(0.08 + 0.62 * t).toFixed(3)})`
    : `hsla(${Math.round(130 * (1 - t))}, 70%, 55%, ${(0.22 + 0.38 * t).toFixed(3)})`;
}

function retint() {
  const run = runs[runs.length - 1];
  if (!run) return drawLegend();
  for (const span of els.output.querySelectorAll('.tok')) tintSpan(span, run.tokens[Number(span.dataset.index)]);
  drawLegend();
}

function drawLegend() {
  const how = els.tint.value;
  const ramp = how === 'surprisal'
    ? 'linear-gradient(90deg, hsla(28,95%,55%,.08), hsla(28,95%,55%,.7))'
    : 'linear-gradient(90deg, hsla(130,70%,55%,.22), hsla(65,70%,55%,.4), hsla(0,70%,55%,.6))';
  const [lo, hi] = how === 'surprisal' ? ['0 bits', '≥ 12 bits'] : ['p = 1', 'p = 0'];
  els.legend.innerHTML = '';
  const a = document.createElement('span'); a.textContent = lo;
  const r = document.createElement('span'); r.className = 'ramp'; r.style.background = ramp;
  const b = document.createElement('span'); b.textContent = hi;
  els.legend.append(a, r, b);
}

// ---- Divergence ------------------------------------------------------------------------------

function showDivergence(run, prev) {
  const box = els.divergence;
  box.textContent = '';
  const d = run.diverged || (run.tokens.length !== prev.tokens.length ? { index: Math.min(run.tokens.length, prev.tokens.length) } : null);
  const why = document.createElement('p');
  why.className = 'hint';
  why.textContent = 'Same prompt, same seed: Nucleus is deterministic (each request has its own sampler chain, random stream and KV cache, so batching never changes a token), so any difference comes from the settings you changed.';
  const what = document.createElement('strong');
  if (!d) {
    what.textContent = `Identical to the previous run (${run.tokens.length} tokens).`;
    box.dataset.divergence = 'none';
  } else {
    const tok = (s) => (s ? (s.end ? '⏹ (end)' : JSON.stringify(s.token)) : 'nothing');
    what.textContent = `First divergence at token ${d.index + 1}: previously ${tok(prev.tokens[d.index])}, now ${tok(run.tokens[d.index])}.`;
    box.dataset.divergence = String(d.index);
  }
  box.append(what, why);
  show(box);
}

// ---- The step view ---------------------------------------------------------------------------

function selectToken(i, focus) {
  const run = runs[runs.length - 1];
  if (!run || i < 0 || i >= run.tokens.length) return;
  const spans = els.output.querySelectorAll('.tok');
  spans.forEach((s) => { s.classList.remove('selected'); s.tabIndex = -1; s.setAttribute('aria-selected', 'false'); });
  const span = spans[i];
  span.classList.add('selected');
  span.tabIndex = 0;
  span.setAttribute('aria-selected', 'true');
  if (focus) span.focus();
  selected = i;
  renderStep(run.tokens[i], i);
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function visible(t) {
  return t.replace(/ /g, '␣').replace(/\n/g, '↵').replace(/\t/g, '⇥') || '∅';
}

function distribution(kind, title, list, chosenId, mass) {
  const box = el('div', 'dist ' + kind);
  box.dataset.dist = kind;
  box.appendChild(el('h3', '', title));
  let sum = 0;
  for (const c of list) {
    sum += c.p;
    const row = el('div', 'bar-row' + (c.id === chosenId ? ' chosen' : ''));
    row.dataset.p = String(c.p);
    row.dataset.id = String(c.id);
    const label = el('span', 'label', visible(c.token));
    label.title = `id ${c.id}: ${JSON.stringify(c.token)}`;
    const track = el('span', 'track');
    const fill = el('span', 'fill');
    fill.style.display = 'block';
    fill.style.width = (100 * c.p).toFixed(1) + '%'; // one scale for both sides
    track.appendChild(fill);
    row.append(label, track, el('span', 'val', fmt(c.p) + (c.id === chosenId ? ' ◀' : '')));
    box.appendChild(row);
  }
  if (!list.some((c) => c.id === chosenId)) {
    box.appendChild(el('div', 'sum', `The chosen token is not among these (its p: ${fmt(mass)}).`));
  }
  const s = el('div', 'sum', `These ${list.length} hold ${(100 * sum).toFixed(1)}% of the probability.`);
  s.dataset.sum = String(sum);
  box.appendChild(s);
  return box;
}

function renderStep(s, i) {
  const box = els.step;
  box.textContent = '';
  if (!s) {
    box.appendChild(el('p', 'placeholder', 'Click a token (or focus it and press Enter) to see its step.'));
    return;
  }
  box.appendChild(el('h2', '', `Token ${i + 1}: ${s.end ? '⏹ end of generation' : JSON.stringify(s.token)} (id ${s.id})`));
  const stats = el('div', 'stats');
  const stat = (k, v) => { const p = el('span'); p.append(el('b', '', k + ' '), document.createTextNode(v)); stats.appendChild(p); };
  stat('p (model)', fmt(s.p));
  stat('p (after chain)', fmt(s.post_p));
  stat('entropy', `${s.entropy.toFixed(3)} nats (after chain ${s.post_entropy.toFixed(3)})`);
  stat('surprisal', isFinite(s.surprisal) ? `${s.surprisal.toFixed(2)} bits` : '∞');
  if (s.allowed !== null && s.allowed !== undefined) {
    stat('constraint allowed', `${s.allowed} tokens`);
    stats.lastChild.dataset.allowed = String(s.allowed);
  }
  box.appendChild(stats);
  if (!s.sampled) box.appendChild(el('p', 'hint', 'Taken without a sampling step (the constraint allowed only this token, or chose greedily).'));
  if (s.resampled) box.appendChild(el('p', 'hint', "The grammar refused the chain's first pick, so the chain ran again on the allowed tokens (llama.cpp's order); the numbers below are that run's."));
  const dists = el('div', 'dists');
  dists.append(
    distribution('raw', 'Before the chain (raw softmax)', s.raw_top, s.id, s.p),
    distribution('post', 'After the chain (sampled from)', s.post_top, s.id, s.post_p),
  );
  box.appendChild(dists);
  if (s.chain.length) {
    const table = el('table', 'chain');
    const head = el('tr');
    head.append(el('th', '', 'sampler'), el('th', '', 'candidates left'), el('th', '', ''));
    table.appendChild(head);
    const rows = [['start', s.candidates_in, false]].concat(s.chain.map((c) => [c.sampler, c.candidates, c.sampler.startsWith('?')]));
    const top = Math.log(Math.max(2, s.candidates_in));
    for (const [name, n, noop] of rows) {
      const tr = el('tr', noop ? 'noop' : '');
      tr.dataset.sampler = name;
      tr.dataset.candidates = String(n);
      const bar = el('div', 'cbar');
      bar.style.width = (100 * Math.log(Math.max(1, n) + 1) / (top + 1)).toFixed(1) + '%';
      const cell = el('td'); cell.appendChild(bar);
      tr.append(el('td', '', noop ? `${name.slice(1)} (no-op)` : name === 'start' ? (s.allowed != null ? 'after the grammar mask' : 'vocabulary') : name), el('td', '', String(n)), cell);
      table.appendChild(tr);
    }
    box.appendChild(table);
  }
}

// ---- Server info -----------------------------------------------------------------------------

let modelId = '';
async function pollServer() {
  try {
    if (!modelId) {
      const m = await fetch('v1/models', { headers: headers() });
      if (m.ok) modelId = (await m.json()).data[0].id;
    }
    const r = await fetch('metrics', { headers: headers() });
    if (r.ok) {
      const text = await r.text();
      const get = (name) => {
        const m = new RegExp('^' + name + ' ([0-9.eE+-]+)$', 'm').exec(text);
        return m ? Number(m[1]) : NaN;
      };
      els.server.textContent = `${modelId || 'model'} · slots ${get('nucleus_slots_busy')}/${get('nucleus_slots_total')} busy · queue ${get('nucleus_queue_depth')} · ${get('nucleus_generation_tokens_per_second').toFixed(1)} tokens/s`;
    } else {
      els.server.textContent = r.status === 401 ? 'server: needs an API key (Connection)' : `server: HTTP ${r.status}`;
    }
  } catch (e) {
    els.server.textContent = 'server unreachable';
  }
}

// ---- Wiring ----------------------------------------------------------------------------------

function init() {
  buildFields();
  drawLegend();
  $('reset').addEventListener('click', resetFields);
  els.generate.addEventListener('click', () => generate(false));
  els.regenerate.addEventListener('click', () => generate(true));
  els.stop.addEventListener('click', () => controller && controller.abort());
  els.tint.addEventListener('change', retint);
  for (const r of document.querySelectorAll('input[name="mode"]')) {
    r.addEventListener('change', () => {
      $('chat-box').hidden = mode() !== 'chat';
      $('text-box').hidden = mode() !== 'text';
    });
  }
  els.constraint.dataset.kind = '';
  for (const r of document.querySelectorAll('input[name="constraint"]')) r.addEventListener('change', onConstraintKind);
  els.constraint.addEventListener('input', () => hide(els.constraintError));
  els.output.addEventListener('click', (e) => {
    const t = e.target.closest('.tok');
    if (t) selectToken(Number(t.dataset.index), true);
  });
  els.output.addEventListener('keydown', (e) => {
    const t = e.target.closest('.tok');
    if (!t) return;
    const i = Number(t.dataset.index);
    if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); selectToken(i, true); }
    if (e.key === 'ArrowRight') { e.preventDefault(); selectToken(i + 1, true); }
    if (e.key === 'ArrowLeft') { e.preventDefault(); selectToken(i - 1, true); }
  });
  document.addEventListener('keydown', (e) => {
    if ((e.ctrlKey || e.metaKey) && e.key === 'Enter') { e.preventDefault(); generate(false); }
    if (e.altKey && (e.key === 'r' || e.key === 'R')) { e.preventDefault(); if (runs.length) generate(true); }
    if (e.key === 'Escape' && controller) controller.abort();
  });
  pollServer();
  setInterval(pollServer, 3000);
}

init();
