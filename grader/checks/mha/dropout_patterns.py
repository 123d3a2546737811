"""Which dropout a module's train() output shows, read at the dropout check's own weights and inputs: the ordinary,
secret ones of the very train() runs that see the output change with one layer dropping. No weight, input or shape
tells the reading apart from those runs (a probe of its own, at weights such as wq = wk = 0, could be told apart by
tensor operations the judge runs), so code that drops only where its pattern is read drops wherever it is graded.

What the reading needs beyond the code's own eval() output (each head's attention weights and values, for
attn_dropout's place) is the float64 reference's: where the module's values are wrong, the check says so instead."""
from __future__ import annotations

import torch

from grader.exercises.attention import DROPOUTS
from grader.checks import diagnosis, reference
from grader.checks.common import MODULE_TOLERANCE

LAYER_PATTERNS = {DROPOUTS[0]: ("weights", "both"), DROPOUTS[1]: ("output", "heads", "both")}
"""The patterns the train() output with only that layer dropping may show: its own (resid_dropout's also on the heads
before wo, one linear map away), or both layers' where the code drops with args.dropout itself
(`F.dropout(x, self.dropout, self.training)`)."""
KEPT_RTOL = 1e-5
"""float32's room for a kept value against s times the code's own eval() value: the same operations on the same
numbers, one exact product by s apart."""
HEADS_RTOL = 1e-3
"""The same read before wo, through its inverse: float32 rounding grows with wo's condition number."""


def dropout_pattern(out: torch.Tensor | None, plain: torch.Tensor | None, call: dict, weights: dict, heads: int,
                    p: float, seed: int) -> str | None:
    """The pattern of the causal train() output `out` on `call` with `weights`, at rate p (s = 1/(1-p)), against the
    code's own eval() output `plain` of the same call: "output" (each value kept ×s or dropped), "heads" (the same on
    each head's output before wo), "weights" (each head's attention weights kept ×s or dropped key by key: the output
    rebuilt from the reference's weights and values), "both" (weights, then output, drawn from `seed` in that order,
    as the judge draws nn.Dropout's masks), or None (no dropout's pattern: noise, or nothing dropped)."""
    if out is None or plain is None or out.shape != plain.shape or not bool(torch.isfinite(out).all()):
        return None
    s, y, e = 1 / (1 - p), out.double(), plain.double()
    wo = weights["wo"].double()
    if _each_kept_or_dropped(y, e, s, KEPT_RTOL):
        return "output"
    if _each_kept_or_dropped(_before(wo, y), _before(wo, e), s, HEADS_RTOL):
        return "heads"
    atol, rtol = MODULE_TOLERANCE[torch.float32]
    if _attention_weights_dropped(y, call, weights, heads, s, atol, rtol):
        return "weights"
    both = reference.attention_dropout_placements(call["q"], call["k"], call["v"], weights, heads, p, seed)["both"]
    return "both" if diagnosis.close(y, both, atol, rtol) else None


def _before(wo: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """What went into `y = x @ wo.T`: x, one solve (wo is the parent's ordinary weight, invertible)."""
    return torch.linalg.solve(wo, y.reshape(-1, y.shape[-1]).T).T.reshape(y.shape)


def _each_kept_or_dropped(y: torch.Tensor, e: torch.Tensor, s: float, rtol: float) -> bool:
    """Every value of y is 0 or s·e, with at least one of each where they differ."""
    atol = rtol * float(e.abs().max())
    dropped = y.abs() <= atol
    kept = (y - s * e).abs() <= atol + rtol * (s * e).abs()
    telling = e.abs() > 10 * atol  # where e is about 0, dropped and kept look the same
    return bool((dropped | kept).all() and (dropped & telling).any() and (kept & ~dropped & telling).any())


def _attention_weights_dropped(y: torch.Tensor, call: dict, weights: dict, heads: int, s: float, atol: float,
                               rtol: float) -> bool:
    """Whether some choice of kept keys per head and position, with some dropped and some kept, rebuilds y. Each
    head's output before wo is first matched to the nearest of its 2^T sums s·Σ kept weight·value (T ≤ 8: 256 at
    most); then, head by head, the sum whose image through wo best fits what the other heads leave of y (a key of
    tiny weight is told apart there, not before wo, whose inverse can blow float32's rounding past it), judged as the
    verdict judges: by the largest miss in units of each value's tolerance (in plain squares, float32's error up to
    the tolerance can sit nearer another key choice). A round never makes a row's largest miss worse; the choice is
    only a guess: the output rebuilt from it and held against y is the verdict."""
    W = {name: w.double() for name, w in weights.items()}
    B, T, C = y.shape
    d = C // heads
    attention, values = _causal_attention(call, W, heads)
    choices = ((torch.arange(2 ** T)[:, None] >> torch.arange(T)) & 1).double()  # (2^T, T): key j kept or not
    sums = s * torch.einsum("cj,bhij,bhjd->bhicd", choices, attention, values)  # (B, H, T, 2^T, d)
    picked = (sums - _by_head(_before(W["wo"], y), heads).unsqueeze(3)).square().sum(-1).argmin(-1)  # (B, H, T)
    through_wo = torch.einsum("bhicd,hde->bhice", sums, W["wo"].T.reshape(heads, d, C))  # (B, H, T, 2^T, C)
    room = (atol + rtol * y.abs()).unsqueeze(2)  # (B, T, 1, C): each value's tolerance
    for _ in range(3):
        for h in range(heads):
            chosen = through_wo.gather(3, picked[..., None, None].expand(B, heads, T, 1, C)).squeeze(3)  # (B, H, T, C)
            left = y - (chosen.sum(1) - chosen[:, h])  # (B, T, C): what the other heads leave of y
            picked[:, h] = ((through_wo[:, h] - left.unsqueeze(2)) / room).abs().amax(-1).argmin(-1)
    kept = choices[picked]  # (B, H, T, T)
    rebuilt = (s * kept * attention @ values).transpose(1, 2).reshape(B, T, C) @ W["wo"].T  # (B, T, C)
    visible = ~reference.causal_future(T)
    return bool(diagnosis.close(y, rebuilt, atol, rtol) and (kept[..., visible] == 0).any()
                and (kept[..., visible] == 1).any())


def _causal_attention(call: dict, W: dict, heads: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The reference's causal attention weights (B, H, T, T) and values (B, H, T, d) of `call`, in float64."""
    q, k, v = (call[name].double() for name in "qkv")
    T, d = q.shape[1], q.shape[2] // heads
    Q, K = _by_head(q @ W["wq"].T, heads), _by_head(k @ W["wk"].T, heads)  # (B, H, T, d)
    scores = Q @ K.transpose(-2, -1) / d ** 0.5  # (B, H, T, T)
    attention = torch.softmax(scores.masked_fill(reference.causal_future(T), float("-inf")), dim=-1)
    return attention, _by_head(v @ W["wv"].T, heads)


def _by_head(x: torch.Tensor, heads: int) -> torch.Tensor:
    """(B, T, C) -> (B, H, T, d), the heads laid out as the reference splits them."""
    B, T, C = x.shape
    return x.view(B, T, heads, C // heads).transpose(1, 2)


def both_runs(T: int, head_dim: int) -> int:
    """How many train() runs under one seed `both_layers_dropped` reads: enough that a row's kept outputs, about half
    of its dim values a run, outnumber its unknowns (a keep-or-drop for each head and visible key: H·T at the last
    row) with room to spare."""
    return min(16, max(3, -(-5 * T // (2 * head_dim)) + 1))


def both_layers_dropped(outs: list[torch.Tensor], calls: list[dict], weights: dict, heads: int, p: float) -> bool:
    """Whether train() outputs with both dropouts at rate p, each on its own inputs and all drawn from one seed (so
    one and the same pair of masks, whatever layout the code draws them in), show both layers' patterns: the output
    (or, for resid_dropout applied before wo, the heads before wo) kept ×s or dropped at the same places in every
    run, and, row by row, a keep-or-drop of each head's attention weight key by key that rebuilds every run. The
    output is linear in those keep-or-drops once the inputs are known: they are read by least squares over the runs,
    rounded, and the outputs rebuilt from them are the verdict; a row with fewer kept values than unknowns is left
    unread. Read from the outputs only, it needs no knowledge of how the code lays out heads or draws masks."""
    if any(out is None or out.shape != call["q"].shape or not bool(torch.isfinite(out).all())
           for out, call in zip(outs, calls)):
        return False
    s = 1 / (1 - p)
    W = {name: w.double() for name, w in weights.items()}
    ys = torch.stack([out.double() for out in outs])  # (R, B, T, C)
    read = [_causal_attention(call, W, heads) for call in calls]
    attention = torch.stack([a for a, _ in read])  # (R, B, H, T, T)
    values = torch.stack([v for _, v in read])  # (R, B, H, T, d)
    identity = torch.eye(ys.shape[-1], dtype=torch.float64)
    return (_both_read(ys, ys, attention, values, W["wo"], identity, s, KEPT_RTOL)
            or _both_read(ys, _before(W["wo"], ys), attention, values, identity, W["wo"], s, HEADS_RTOL))


def _both_read(ys: torch.Tensor, read: torch.Tensor, attention: torch.Tensor, values: torch.Tensor, wo: torch.Tensor,
               then: torch.Tensor, s: float, rtol: float) -> bool:
    """`both_layers_dropped` at one place of resid_dropout: `read` (R, B, T, C) = resid mask ⊙ s·wo(heads), the heads
    from the attention weights kept ×s or dropped, and the outputs ys = `read` through `then` (wo where resid_dropout
    acts before it, where float32's rounding, grown by wo's inverse, is judged at the output)."""
    R, B, H, T, d = values.shape
    atol = rtol * float(read.abs().max())
    # (B, T, C): one mask for every run; a place dropped is 0 in each (a kept value near 0 in one run is no sign)
    resid_kept = ~(read.abs() <= atol).all(0)
    if not (bool(resid_kept.any()) and bool((~resid_kept).any())):
        return False
    # each head's value j carried to the output through wo: (R, B, H, T_key, C)
    carried = torch.einsum("rbhjd,hdc->rbhjc", values, wo.T.reshape(H, d, -1))
    keys_kept, seen = torch.zeros(B, H, T, T, dtype=torch.float64), torch.zeros(B, H, T, T, dtype=torch.bool)
    for b in range(B):
        for t in range(T):
            where = resid_kept[b, t]
            if not bool(where.any()):
                continue
            # (R, H, t+1, kept C): what keeping head h's key j adds to the kept values of this row
            terms = s * s * attention[:, b, :, t, :t + 1, None] * carried[:, b, :, :t + 1][..., where]
            system = terms.permute(0, 3, 1, 2).reshape(-1, H * (t + 1))
            # a keep-or-drop that adds nothing kept (its head's values all dropped after it) is not read
            live = system.abs().amax(0) > 1e-9 * float(system.abs().max())
            if not bool(live.any()) or int(torch.linalg.matrix_rank(system[:, live], rtol=1e-6)) < int(live.sum()):
                continue  # fewer independent kept values this row than keep-or-drops to read
            solved = torch.linalg.lstsq(system[:, live], read[:, b, t][..., where].reshape(-1, 1)).solution
            row_kept = torch.zeros(H * (t + 1), dtype=torch.float64)
            row_kept[live] = (solved.view(-1) > 0.5).double()
            keys_kept[b, :, t, :t + 1] = row_kept.view(H, t + 1)
            seen[b, :, t, :t + 1] = live.view(H, t + 1)
    if not bool(seen.any()):
        return False
    heads_out = s * torch.einsum("bhij,rbhijd->rbhid", keys_kept,
                                 attention[..., None] * values[:, :, :, None])  # (R, B, H, T, d)
    rebuilt = (s * resid_kept * (heads_out.transpose(2, 3).reshape(R, B, T, -1) @ wo.T)) @ then.T  # (R, B, T, C)
    rows = seen.any(1).any(-1)  # (B, T): the rows read
    close = diagnosis.close(ys[:, rows], rebuilt[:, rows], *MODULE_TOLERANCE[torch.float32])
    weight_telling = (attention > 0.05).all(0) & seen  # (B, H, T, T): a key whose weight shows in every run
    return bool(close and (keys_kept[weight_telling] == 0).any() and (keys_kept[weight_telling] == 1).any())
