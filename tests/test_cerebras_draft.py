"""The post-launch Cerebras rows charge the draft model's time: a step verifies 3 draft tokens that the Llama 3.2 1B
draft produced one after another on its own CS-3, so a step takes the target's pass plus 3 of the draft's own
one-token times, and the row's speed is the tokens accepted per step over that."""

import pytest

from wsemoe.validate import cerebras


@pytest.fixture(scope="module")
def rows():
    ms = cerebras.models()
    return ms, {r["id"]: r for r in cerebras.post_rows(ms) + cerebras.draft_rows(ms)}


@pytest.mark.parametrize("name, wafers", [("llama-3.1-70b", 4), ("llama-3.1-405b", None)])
def test_a_post_launch_step_pays_three_draft_tokens_of_the_1b_draft(rows, name, wafers):
    ms, by_id = rows
    drafts, accepted = cerebras.SPECULATION["post"]
    tau = 1.0 / cerebras.speed(ms["llama-3.2-1b"], None, "draft")          # the draft's own one-token time
    free = cerebras.speed(ms[name], wafers, "post", "step_latency_s")     # the target's step, no draft charged
    assert drafts == 3 and 80e-6 < tau < 100e-6                            # 1.24B on one CS-3: tens of µs a token
    expected = accepted / (free + drafts * tau) / cerebras.POST_SPEED[name][0]
    assert by_id[f"cerebras.post:{name}"]["value"] == pytest.approx(expected, rel=1e-9)
    assert "llama-3.2-1b draft" in by_id[f"cerebras.post:{name}"]["claim"]


def test_the_context_rows_show_the_bound_and_the_other_draft(rows):
    ms, by_id = rows
    text = by_id["cerebras.draft:llama-3.1-405b"]["model"]
    bound = cerebras.speed(ms["llama-3.1-405b"], None, "post")
    assert text.startswith(f"no draft time (a bound): {bound:,.0f}") and "llama-3.1-8b draft" in text
    assert "llama-3.2-1b" not in text.split(";")[1]
