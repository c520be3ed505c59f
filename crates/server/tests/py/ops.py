"""Operational endpoints: /health, /v1/models through the client, /metrics in Prometheus text."""

import re

from common import MODEL, chat, client, done, raw

c = client()
status, _, data = raw("GET", "/health")
assert status == 200 and b'"ok"' in data, (status, data)
models = c.models.list()
ids = [m.id for m in models.data]
assert ids == [MODEL], ids
assert models.data[0].object == "model" and models.data[0].owned_by == "nucleus"
r = chat(c, "hi", max_tokens=3, temperature=0)
status, headers, data = raw("GET", "/metrics")
assert status == 200 and headers["content-type"].startswith("text/plain"), headers
text = data.decode()
values = {}
for line in text.splitlines():
    if line and not line.startswith("#"):
        name, value = line.rsplit(" ", 1)
        values[name] = float(value)
for name in ["nucleus_prompt_tokens_total", "nucleus_completion_tokens_total", "nucleus_generation_tokens_per_second",
             "nucleus_time_to_first_token_seconds_count", "nucleus_queue_depth", "nucleus_sampling_seconds_per_token",
             "nucleus_slots_busy", "nucleus_decode_steps_total"]:
    assert name in values, name
assert values["nucleus_completion_tokens_total"] >= 3
assert values["nucleus_time_to_first_token_seconds_count"] >= 1
assert values['nucleus_requests_total{route="/v1/chat/completions",status="200"}'] >= 1
assert re.search(r'nucleus_time_to_first_token_seconds_bucket\{le="\+Inf"\} \d+', text)
done("ops")
