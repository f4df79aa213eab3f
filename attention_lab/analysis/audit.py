"""The chapter's attention audit as a function: ``audit(fn, Q, K, V, ...)`` returns a report.

    audit(attention_lab.tensor.attention, Q, K, V, lengths=lengths, fill=float("-inf"))
    audit(my_attention, Q, K, V, mask=mask, sources={"query": "decoder states", ...})
    attention_lab.toy.audit.audit_model(model, source=["abc"])   # the trained toy model

``fn`` is any attention callable: it is called as ``fn(Q, K, V, mask=...)`` with the combined
boolean eligibility (True = eligible, broadcast to (..., T, S)) and returns ``(context,
weights)``, ``(context, weights, scores)``, an object with ``.context`` and ``.weights`` (and
optionally ``.scores``), or the context alone, as numpy arrays or torch tensors. What only the
module's author knows is *declared*: ``sources`` (where the query, keys and values come from,
projections, sharing, positions, truncation, cache), the score function, scale, fill, dropout.

The report covers the chapter's audit list. Some entries are *measured* on the call (normalisation
axis, masked mass, all-masked-row behaviour, score range, entropy, non-finite values, output norms,
whether the context stays inside the range of the values, latency, tensor memory and whether a
T x S matrix is formed); the declared ones are marked as such. Problems are flagged with ``[!!]``
(``fail``) or ``[ ?]`` (``warn``), among them:

* ``wrong_axis``: the weights are normalised over the query axis (-2), not over the keys (-1);
* ``post_softmax_mask``: masked keys have zero weight but the eligible weights do not sum to 1 (the
  mask was applied after the softmax without renormalising);
* ``mask_not_applied``: masked keys receive weight;
* ``nan_fill``: a row without eligible keys returns NaN (a ``-inf`` fill, or a finite fill that
  overflows to ``-inf`` in the dtype, makes softmax compute 0/0);
* ``fill_overflows``: the declared fill is not representable in the dtype;
* ``non_finite``: NaN or inf in the output for the inputs given;
* ``outside_value_range``: a context coordinate lies outside the range of the eligible values,
  impossible for a weighted average;
* ``reference_mismatch``: the weights differ from a masked softmax of the scores.

An audit does not establish that the attended positions explain the output: that needs the
interventions of :mod:`attention_lab.analysis.explain`.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

import numpy as np

from .._validate import count, shape_str
from .cost import human_bytes

STATUS_MARK = {"ok": "[ok]", "info": "[--]", "warn": "[ ?]", "fail": "[!!]"}


@dataclass
class AuditItem:
    section: str
    name: str
    value: str
    status: str = "info"  # ok | info | warn | fail
    flag: str | None = None
    measured: bool = True


@dataclass
class AuditReport:
    """The audit's entries (``items``) and a text rendering (``str(report)``)."""

    title: str
    items: list[AuditItem] = field(default_factory=list)
    data: dict = field(default_factory=dict, repr=False)

    def add(self, section, name, value, status="info", flag=None, measured=True):
        self.items.append(AuditItem(section, name, value, status, flag, measured))

    @property
    def flags(self) -> set[str]:
        """Codes of the problems found (see the module docstring)."""
        return {i.flag for i in self.items if i.flag and i.status in ("warn", "fail")}

    @property
    def findings(self) -> list[AuditItem]:
        return [i for i in self.items if i.status in ("warn", "fail")]

    @property
    def ok(self) -> bool:
        return not any(i.status == "fail" for i in self.items)

    def __getitem__(self, name: str) -> AuditItem:
        for i in self.items:
            if i.name == name:
                return i
        raise KeyError(f"no audit entry {name!r}; entries: {[i.name for i in self.items]}")

    def __str__(self) -> str:
        width = max(len(i.name) for i in self.items) if self.items else 10
        lines = [self.title, "=" * len(self.title)]
        section = None
        for i in self.items:
            if i.section != section:
                section = i.section
                lines += ["", section]
            undeclared = i.value.startswith(("not declared", "none declared", "unknown"))
            how = "" if i.measured or undeclared else " (declared)"
            lines.append(f"  {STATUS_MARK[i.status]} {i.name:<{width}}  {i.value}{how}")
        lines.append("")
        if self.findings:
            lines.append(f"{len(self.findings)} finding(s):")
            lines += [f"  {STATUS_MARK[i.status]} {i.name}: {i.value}" for i in self.findings]
        else:
            lines.append("no findings: the call behaves as a masked, key-axis softmax attention")
        return "\n".join(lines)

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))

    def __repr__(self) -> str:
        return (f"AuditReport({self.title!r}, {len(self.items)} entries, "
                f"flags={sorted(self.flags)})")


# ------------------------------------------------------------------------------------------------

def _np(x):
    if x is None:
        return None
    if hasattr(x, "detach"):
        return x.detach().cpu().double().numpy() if x.dtype.is_floating_point else \
            x.detach().cpu().numpy()
    return np.asarray(x)


def _unpack(out):
    """(context, weights or None, scores or None) from what an attention callable returned."""
    if hasattr(out, "context") and hasattr(out, "weights"):  # (before tuples: NamedTuples)
        return out.context, out.weights, getattr(out, "scores", None)
    if isinstance(out, tuple) and len(out) in (2, 3):
        return (*out, None)[:3]  # scores None when not returned
    if hasattr(out, "shape") and hasattr(out, "dtype"):  # the context alone (e.g. SDPA)
        return out, None, None
    raise TypeError("the audited function must return (context, weights), (context, weights, "
                    "scores), an object with .context and .weights, or the context; got "
                    f"{type(out).__name__}")


def _fmt(x: float, digits: int = 3) -> str:
    if x is None or not np.isfinite(x):
        return str(x)
    return f"{x:.{digits}g}"


def _dtype_name(x) -> str:
    return str(getattr(x, "dtype", np.asarray(x).dtype)).replace("torch.", "")


def audit(fn, Q, K, V, *, mask=None, lengths=None, is_causal: bool = False,
          causal_align: str = "upper_left", mask_arg: str = "mask", sources: dict | None = None,
          score: str = "dot", scale: float = 1.0, temperature: float = 1.0, fill=None,
          dropout: str | None = None, repeat: int = 5, title: str | None = None,
          probe: bool = True) -> AuditReport:
    """Audit one attention call (see the module docstring). Returns an :class:`AuditReport`.

    Chapter, Level 4, *Attention modules need targeted tests*: the audit list, measured where a
    call can show it and declared where only the module's author knows it.

    ``fn`` is called as ``fn(Q, K, V, mask=<bool eligibility>)`` when it has a parameter named
    ``mask_arg`` (``"attn_mask"`` for ``torch.nn.functional.scaled_dot_product_attention``), else
    as ``fn(Q, K, V, <eligibility>)``; ``mask``, ``lengths``, ``is_causal`` and ``causal_align``
    are combined into that one eligibility. ``sources`` is a dict with keys ``query``, ``key``,
    ``value``, ``projections``, ``sharing``, ``positions``, ``truncation``, ``cache``, ``rules``;
    ``score`` names the score function; ``scale`` and ``temperature`` recompute dot-product
    scores when the call returns none; ``fill`` is what the function writes at masked scores, if
    known; these, ``sources`` and ``dropout`` are declared, not measured. ``probe=False`` skips
    the extra call with an all-masked row. ``repeat`` timed calls give the latency (their
    median); ``repeat=0`` times none (a notebook whose stored output must not vary).
    """
    import torch

    from .. import tensor

    if not callable(fn):
        raise TypeError(f"fn must be an attention callable fn(Q, K, V, {mask_arg}=...), got "
                        f"{type(fn).__name__}")
    for name, x in (("Q", Q), ("K", K), ("V", V)):
        if x is None:
            raise TypeError(f"audit needs {name} (the inputs of the call to audit)")
    is_torch = isinstance(Q, torch.Tensor)
    Qt, Kt, Vt = (x if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x))
                  for x in (Q, K, V))
    if Qt.dim() < 2 or 0 in Qt.shape[:-1]:
        raise ValueError(f"Q must have shape (..., T, D_k) with at least one query, got "
                         f"{shape_str(Qt.shape)}; audit one query q (D_k,) as q[None, :]")
    m = tensor.eligibility(Qt, Kt, mask=mask, lengths=lengths, is_causal=is_causal,
                           causal_align=causal_align)
    full_shape = torch.broadcast_shapes(Qt.shape[:-2], Kt.shape[:-2]) + (Qt.shape[-2],
                                                                         Kt.shape[-2])
    m_full = (torch.ones(full_shape, dtype=torch.bool) if m is None else m.expand(full_shape))
    if title is None:
        title = f"Audit: {getattr(fn, '__name__', type(fn).__name__)}"

    repeat = count(repeat, "repeat", allow_zero=True)
    by_name = _takes_keyword(fn, mask_arg)

    def call(mask_value):
        arg = mask_value if is_torch else mask_value.numpy()
        return fn(Q, K, V, **{mask_arg: arg}) if by_name else fn(Q, K, V, arg)

    declared = dict(sources or {})
    rules = [rule for rule, applies in (("explicit mask", mask is not None),
                                        ("padding (lengths)", lengths is not None),
                                        (f"causal ({causal_align})", is_causal)) if applies]
    declared.setdefault("rules", ", ".join(rules) if rules else "none (every key eligible)")
    if is_causal:
        declared.setdefault("positions", f"causal alignment {causal_align} (SDPA's is_causal is "
                                         f"upper_left)")
    return _audit_call(call, Qt, Kt, Vt, m_full, declared=declared, score=score, scale=scale,
                       temperature=temperature, fill=fill, dropout=dropout,
                       repeat=repeat, title=title, probe=probe, same_kv=K is V)


def _takes_keyword(fn, name: str) -> bool:
    """Whether ``fn`` accepts the keyword argument ``name``."""
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: try the keyword
        return True
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in params)


def _audit_call(call, Q, K, V, m_full, *, declared, score, scale, temperature, fill, dropout,
                repeat, title, probe, same_kv=False) -> AuditReport:
    """Run the call (timed, memory-tracked), then fill in the report section by section."""
    import torch

    from .._memory import tensor_memory

    rep = AuditReport(title)
    with torch.inference_mode():
        with tensor_memory() as mem:
            out = call(m_full)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            call(m_full)
            times.append(time.perf_counter() - t0)
    ctx, w, sc = (_np(x) for x in _unpack(out))
    mask_np = m_full.numpy()
    _sources_and_shapes(rep, Q, K, V, ctx, w, declared, same_kv)
    _score_and_normalisation(rep, w, mask_np, score, scale, temperature, dropout)
    _eligibility(rep, call, m_full, w, _dtype_name(Q), declared, fill, probe)
    _numbers(rep, Q, K, V, ctx, w, sc, mask_np, score, scale, temperature)
    t_med = statistics.median(times) if times else None
    _cost(rep, _dtype_name(Q), Q.shape[-2] * K.shape[-2], mask_np, t_med, len(times), mem)
    rep.add("Explanation", "interventions", "not run by the audit: attention weights alone do "
            "not show which inputs explain the output; see attention_lab.analysis.explain",
            measured=False)
    rep.data.update(context=ctx, weights=w, scores=sc, mask=mask_np, seconds=t_med,
                    peak_tensor_bytes=mem.peak_bytes)
    return rep


def _sources_and_shapes(rep, Q, K, V, ctx, w, declared, same_kv):
    sec = "Sources and shapes"
    for label, key, x in (("query", "query", Q), ("keys", "key", K), ("values", "value", V)):
        src = declared.get(key)
        text = f"shape {shape_str(x.shape)}, {_dtype_name(x)}; source: {src or 'not declared'}"
        rep.add(sec, label, text, measured=src is None)
    rep.add(sec, "projections", declared.get("projections", "not declared"), measured=False)
    sharing = declared.get("sharing")
    if sharing is None:
        sharing = "K and V are the same tensor" if same_kv else "K and V are separate tensors"
    rep.add(sec, "parameter sharing", sharing, measured=declared.get("sharing") is None)
    rep.add(sec, "output shapes", f"context {shape_str(ctx.shape)}, weights "
            f"{shape_str(w.shape) if w is not None else 'not returned'}")


def _masked_mass(w, mask_np) -> float:
    """The largest weight a row puts on masked keys."""
    masked_w = np.where(mask_np, 0.0, np.nan_to_num(w))
    return float(masked_w.sum(-1).max()) if masked_w.size else 0.0


def _score_and_normalisation(rep, w, mask_np, score, scale, temperature, dropout):
    """The declared score, and the axis the weights are normalised over (measured)."""
    sec = "Score and normalisation"
    rep.add(sec, "score function", score, measured=False)
    rep.add(sec, "scale / temperature", f"scale {_fmt(scale)}, temperature {_fmt(temperature)}",
            measured=False)
    rep.add(sec, "dropout", dropout or "not declared", measured=False)
    if w is None:
        rep.add(sec, "normalisation axis", "unknown: the call returns no weights", "warn")
        return
    has_rows = mask_np.any(-1)
    with np.errstate(invalid="ignore"):
        row_sums = np.nansum(w, axis=-1)
        col_sums = np.nansum(w, axis=-2)
    row_dev = np.abs(row_sums - 1)[has_rows]
    col_dev = np.abs(col_sums - 1)[mask_np.any(-2)]
    if (row_dev < 1e-3).all():
        rep.add(sec, "normalisation axis", "-1 (keys): every row with an eligible key sums "
                "to 1", "ok")
    elif (col_dev < 1e-3).all() and col_dev.size > 0 and mask_np.shape[-2] > 1:
        rep.add(sec, "normalisation axis", "-2 (queries): the weights of each KEY sum to 1 "
                "across queries; softmax must run over the keys, axis -1", "fail",
                "wrong_axis")
    elif _masked_mass(w, mask_np) < 1e-6 and (row_sums[has_rows] < 1 - 1e-3).any():
        lo = float(row_sums[has_rows].min())
        rep.add(sec, "normalisation axis", f"rows sum to as little as {_fmt(lo)} while "
                "masked keys get 0: the mask was applied after the softmax without "
                "renormalising", "fail", "post_softmax_mask")
    else:
        rep.add(sec, "normalisation axis", "rows do not sum to 1 over the keys", "fail",
                "not_normalised")


def _eligibility(rep, call, m_full, w, dtype, declared, fill, probe):
    """The rules and the mask, the declared fill, the masked mass, an all-masked row (probed)."""
    from ..softmax import fill_overflows

    sec = "Eligibility"
    mask_np = m_full.numpy()
    rep.add(sec, "rules", declared.get("rules", "as given"), measured=False)
    rep.add(sec, "mask", f"bool (True = eligible), broadcast to {tuple(mask_np.shape)}, "
            f"{float(mask_np.mean()):.0%} of query-key pairs eligible, "
            f"{int((~mask_np.any(-1)).sum())} all-masked row(s)")
    if fill is None:
        rep.add(sec, "fill value", "unknown (not declared)", measured=False)
    elif fill_overflows(fill, dtype):
        rep.add(sec, "fill value", f"{fill!r} overflows to -inf in {dtype}: an all-masked row "
                "becomes NaN", "fail", "fill_overflows", measured=False)
    else:
        rep.add(sec, "fill value", f"{_fmt(fill)} ({dtype})", measured=False)
    if w is not None:
        masked_mass = _masked_mass(w, mask_np)
        if masked_mass > 1e-6:
            rep.add(sec, "masked mass", f"up to {_fmt(masked_mass)} of a row's weight sits on "
                    "masked keys: the mask is not applied", "fail", "mask_not_applied")
        else:
            rep.add(sec, "masked mass", "0 (masked keys get no weight)", "ok")
    rep.add(sec, "all-masked rows", _probe_empty(call, m_full, rep) if probe else
            "not probed", measured=True)
    for name in ("positions", "truncation", "cache"):
        rep.add(sec, name, declared.get(name, "not declared"), measured=False)


def _numbers(rep, Q, K, V, ctx, w, sc, mask_np, score, scale, temperature):
    """Scores against a masked softmax, entropy, non-finite values, norms, the value range."""
    sec = "Numbers"
    has_rows = mask_np.any(-1)
    if sc is None and score in ("dot", "scaled dot"):
        sc_ref = _np(Q.double() @ K.double().transpose(-2, -1)) * scale
        sc_label = "(recomputed: Q K^T x scale)"
    else:
        sc_ref, sc_label = sc, "(returned by the call)"
    if sc_ref is not None:
        _score_checks(rep, sec, sc_ref, sc_label, w, mask_np, temperature, _dtype_name(Q))
    if w is not None:
        finite = has_rows & np.isfinite(w).all(-1)
        rows = w[finite] if w.ndim else w
        if rows.size:
            from ..softmax import entropy

            H = entropy(np.clip(rows, 0, None))
            n_elig = np.maximum(mask_np[finite].sum(-1), 1)
            Hn = np.where(n_elig > 1, H / np.log(np.maximum(n_elig, 2)), 0.0)
            rep.add(sec, "entropy (nats)", f"mean {_fmt(H.mean())}, min {_fmt(H.min())}, "
                    f"max {_fmt(H.max())}; {_fmt(Hn.mean())} of uniform on average")
    n_bad_w = 0 if w is None else int((~np.isfinite(w)).sum())
    n_bad_c = int((~np.isfinite(ctx)).sum())
    n_bad_s = 0 if sc is None else int(np.isnan(sc).sum() + np.isposinf(sc).sum())
    if n_bad_w or n_bad_c or n_bad_s:
        rep.add(sec, "non-finite values", f"{n_bad_c} in the context, {n_bad_w} in the weights, "
                f"{n_bad_s} in the scores (NaN or +inf)", "fail", "non_finite")
    else:
        rep.add(sec, "non-finite values", "none", "ok")
    norms = np.linalg.norm(np.nan_to_num(ctx), axis=-1)
    rep.add(sec, "output norms", f"context L2 norm min {_fmt(norms.min())}, mean "
            f"{_fmt(norms.mean())}, max {_fmt(norms.max())}")
    lo, hi = _value_range(_np(V), mask_np)
    inside = np.isfinite(ctx) & (ctx >= lo - 1e-5) & (ctx <= hi + 1e-5)
    check = has_rows[..., None] & np.isfinite(ctx)
    if (inside | ~check).all():
        rep.add(sec, "context within value range", "yes: every context coordinate lies between "
                "the eligible values' min and max (a weighted average must)", "ok")
    else:
        rep.add(sec, "context within value range", f"no: {int((~inside & check).sum())} "
                "coordinate(s) outside the eligible values' range", "fail",
                "outside_value_range")


def _score_checks(rep, sec, sc_ref, sc_label, w, mask_np, temperature, dtype):
    """The eligible scores' range, and whether the weights are their masked softmax."""
    from ..softmax import softmax

    has_rows = mask_np.any(-1)
    sc_b = np.broadcast_to(sc_ref, mask_np.shape)
    vals = sc_b[mask_np & np.isfinite(sc_b)]
    if vals.size:
        rep.add(sec, "score range", f"[{_fmt(vals.min())}, {_fmt(vals.max())}] over eligible "
                f"pairs {sc_label}")
    if w is None:
        return
    with np.errstate(all="ignore"):
        ref = softmax(np.where(np.isfinite(sc_b), sc_b, 0.0), temperature=temperature,
                      mask=mask_np)
    diff = float(np.nanmax(np.abs(np.nan_to_num(w, nan=np.inf) - ref)[has_rows])) \
        if has_rows.any() else 0.0
    # a verdict against the dtype's tolerance, never the raw difference: that is
    # round-off, and differs between CPUs and thread counts
    tol = "1e-2" if dtype in ("float16", "bfloat16") else "1e-4"
    if diff > float(tol):
        rep.add(sec, "matches masked softmax", f"no: weights differ from a key-axis "
                f"masked softmax of the scores by up to {_fmt(diff)}", "fail",
                "reference_mismatch")
    else:
        rep.add(sec, "matches masked softmax", f"yes, within {tol}", "ok")


def _cost(rep, dtype, per_item, mask_np, t_med, n_times, mem):
    """Latency, time per eligible pair, tensor memory, and whether T x S was materialised."""
    sec = "Cost"
    if t_med is None:
        rep.add(sec, "latency", "not timed (repeat=0: a time differs between runs and machines, "
                "so a stored notebook shows none; repeat=5 times the call here)")
    else:
        rep.add(sec, "latency", f"{t_med * 1e3:.3f} ms per call (median of {n_times})")
        valid_pairs = max(1, int(mask_np.sum()))
        # time per pair, the inverse of a throughput (pairs per second)
        rep.add(sec, "time per pair", f"{t_med / valid_pairs * 1e6:.4f} µs per eligible "
                "query-key pair")
    itemsize = np.dtype(dtype if dtype != "bfloat16" else "float16").itemsize
    rep.add(sec, "tensor memory", f"{human_bytes(mem.peak_bytes)} peak of tensors allocated by "
            f"torch ops during the call; largest single tensor {mem.largest_numel:,} elements")
    n_scores = int(np.prod(mask_np.shape))
    if mem.largest_numel >= per_item:
        rep.add(sec, "materialisation", f"yes: a tensor with >= T x S = {per_item:,} elements "
                f"was formed (all scores: {n_scores:,} elements, "
                f"{human_bytes(n_scores * itemsize)} in {dtype})")
    elif mem.allocations:
        rep.add(sec, "materialisation", f"no: the largest tensor formed has "
                f"{mem.largest_numel:,} < T x S = {per_item:,} elements")
    else:
        rep.add(sec, "materialisation", "unknown: the call allocated no tracked torch tensors "
                "(numpy or a fused kernel)")


def _value_range(Vn, mask_np):
    """Per-row coordinate-wise min and max of the eligible values: (..., T, D_v) each."""
    Vb = np.broadcast_to(Vn[..., None, :, :], mask_np.shape[:-1] + Vn.shape[-2:]) \
        if Vn.ndim >= 2 else Vn
    sel = mask_np[..., None]
    with np.errstate(invalid="ignore"):
        lo = np.where(sel, Vb, np.inf).min(-2)
        hi = np.where(sel, Vb, -np.inf).max(-2)
    return lo, hi


def _probe_empty(call, m_full, rep: AuditReport) -> str:
    """Call again with the first query row of the first batch item fully masked; classify it."""
    probe = m_full.clone()
    idx = (0,) * (probe.dim() - 2)
    probe[idx + (0,)] = False
    try:
        with np.errstate(all="ignore"):
            out = call(probe)
    except Exception as exc:  # a declared 'raise' policy, or a crash
        return f"raise {type(exc).__name__}: {str(exc)[:80]}"
    ctx, w, _ = (_np(x) for x in _unpack(out))
    row_c = ctx[idx + (0,)]
    row_w = None if w is None else w[idx + (0,)]
    if not np.isfinite(row_c).all() or (row_w is not None and not np.isfinite(row_w).all()):
        rep.add("Eligibility", "all-masked row returns NaN", "a row without eligible keys gives "
                "NaN: the fill is -inf (or overflows to -inf in the dtype) and softmax computes "
                "0/0; declare a policy (empty='zeros' | 'nan' | 'raise')", "fail", "nan_fill")
        return "NaN (probed with one all-masked row)"
    if row_w is not None and np.allclose(row_w, row_w.flat[0]) and row_w.flat[0] > 0:
        rep.add("Eligibility", "all-masked row is uniform", "a row without eligible keys spreads "
                "its weight uniformly over ineligible keys (a finite fill without a policy)",
                "warn", "uniform_empty_row")
        return "uniform over ineligible keys (probed)"
    if np.allclose(row_c, 0) and (row_w is None or np.allclose(row_w, 0)):
        return "zeros: weights 0 and context 0 (probed; SDPA's behaviour, empty='zeros')"
    return "something else: neither zeros, NaN nor uniform (probed)"
