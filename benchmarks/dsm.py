"""Benchmark: batched log-domain Sinkhorn (forward + backward) and LTR losses vs list length.

Part 1 -- 10,000 matrices of 50 x 50, 20 iterations, in one run:

* rankmodels ``dsm.sinkhorn`` (+ ``dsm.sinkhorn_vjp``), numba-parallel over the batch;
* the same with ``domain="log"`` (every iteration in the log domain);
* POT ``ot.batch.bregman_log_projection_batch`` (POT's batched log-domain Sinkhorn, numpy
  backend; forward only -- the numpy backend has no gradients);
* POT ``ot.sinkhorn(method="sinkhorn_log")`` called per matrix (timed on a sample and
  scaled to the full batch, as labelled in the output);
* a plain-numpy batched loop (log-sum-exp over the whole stack) with a reverse-mode
  backward that stores only the log-normalisers, like rankmodels.

Part 2 -- value + gradient of SoftNDCG (exact / normal approximation), PiRank relaxed
NDCG@10 (single / multi-level) and SinkProp for one query of length 10 ... 1000, with the
fitted growth exponent ``time ~ n^a``.

Run: ``python benchmarks/dsm.py`` (``--n-matrices 1000`` for a quick run). Needs POT
(``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from rankmodels import dsm
from rankmodels.ltr.neuralsort import pirank_loss
from rankmodels.ltr.sinkprop import sinkprop_loss
from rankmodels.ltr.softrank import softndcg_loss


def _lse(x: np.ndarray, axis: int) -> np.ndarray:
    m = x.max(axis=axis, keepdims=True)
    return m + np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def numpy_sinkhorn(log_a: np.ndarray, n_iter: int) -> tuple[np.ndarray, list, list]:
    """Plain numpy: column then row log-normalisation of the whole stack."""
    X = log_a.copy()
    cs, rs = [], []
    for _ in range(n_iter):
        c = _lse(X, 1)
        X -= c
        r = _lse(X, 2)
        X -= r
        cs.append(c)
        rs.append(r)
    return X, cs, rs


def numpy_sinkhorn_vjp(log_a: np.ndarray, cs: list, rs: list, g_log_p: np.ndarray) -> np.ndarray:
    C, R = sum(cs), sum(rs)
    G = g_log_p.copy()
    for c, r in zip(cs[::-1], rs[::-1], strict=True):
        G -= np.exp(log_a - C - R) * G.sum(axis=2, keepdims=True)
        R = R - r
        G -= np.exp(log_a - C - R) * G.sum(axis=1, keepdims=True)
        C = C - c
    return G


def _time(fn, repeat: int = 1):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def sinkhorn_part(n_mat: int, n: int, n_iter: int, pot_sample: int, seed: int) -> None:
    import ot
    from ot.batch import bregman_log_projection_batch

    rng = np.random.default_rng(seed)
    log_a = rng.normal(size=(n_mat, n, n))
    weights = rng.normal(size=(n_mat, n, n))  # upstream gradient dU/dP
    small = log_a[:4]
    dsm.sinkhorn_vjp(dsm.sinkhorn(small, n_iter=n_iter), weights[:4])  # compile / load cache
    dsm.sinkhorn_vjp(dsm.sinkhorn(small, n_iter=n_iter, domain="log"), weights[:4])

    print(f"== Sinkhorn: {n_mat} matrices {n}x{n}, {n_iter} iterations ==")
    t_fwd, res = _time(lambda: dsm.sinkhorn(log_a, n_iter=n_iter), repeat=3)
    t_bwd, grad = _time(lambda: dsm.sinkhorn_vjp(res, weights), repeat=3)
    t_fwd_log, res_log = _time(lambda: dsm.sinkhorn(log_a, n_iter=n_iter, domain="log"), 2)
    t_bwd_log, grad_log = _time(lambda: dsm.sinkhorn_vjp(res_log, weights), 2)

    t_np_fwd, (X, cs, rs) = _time(lambda: numpy_sinkhorn(log_a, n_iter))
    P_np = np.exp(X)
    t_np_bwd, grad_np = _time(lambda: numpy_sinkhorn_vjp(log_a, cs, rs, weights * P_np))

    ones = np.ones((n_mat, n))
    t_pot_batch, pot = _time(
        lambda: bregman_log_projection_batch(log_a, ones, ones, max_iter=n_iter, tol=0.0)
    )
    vec = np.ones(n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "did not converge": we ask for exactly n_iter
        t_pot_loop, _ = _time(
            lambda: [
                ot.sinkhorn(
                    vec, vec, -x, 1.0, method="sinkhorn_log", numItermax=n_iter, stopThr=0.0
                )
                for x in log_a[:pot_sample]
            ]
        )
    t_pot_loop *= n_mat / pot_sample

    # agreement: same iterations for numpy; POT iterates rows first, so compare converged
    d_np = np.abs(res.p - P_np).max()
    d_grad = max(np.abs(grad - grad_np).max(), np.abs(grad - grad_log).max())
    conv = dsm.sinkhorn(log_a[:20], tol=1e-13, max_iter=5000).p
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        conv_pot = bregman_log_projection_batch(
            log_a[:20], ones[:20], ones[:20], tol=1e-13, max_iter=5000
        )["T"]
    d_pot = np.abs(conv - conv_pot).max()
    iter_pot = np.abs(pot["T"] - res.p).max()

    ours = t_fwd + t_bwd
    rows = [
        ("rankmodels forward", t_fwd, None),
        ("rankmodels backward (VJP)", t_bwd, None),
        ("rankmodels forward + backward", ours, None),
        ("rankmodels domain='log' forward + backward", t_fwd_log + t_bwd_log, None),
        ("plain numpy forward + backward", t_np_fwd + t_np_bwd, None),
        ("POT bregman_log_projection_batch, forward only", t_pot_batch, None),
        (f"POT ot.sinkhorn(log) loop, forward only [{pot_sample} timed, scaled]", t_pot_loop, None),
    ]
    width = max(len(r[0]) for r in rows)
    for name, t, _ in rows:
        print(f"  {name:<{width}}  {t:9.3f} s")
    print(f"  ratio POT batch (fwd)   / rankmodels (fwd)       : {t_pot_batch / t_fwd:7.1f}x")
    print(f"  ratio POT batch (fwd)   / rankmodels (fwd + bwd) : {t_pot_batch / ours:7.1f}x")
    print(f"  ratio POT loop  (fwd)   / rankmodels (fwd + bwd) : {t_pot_loop / ours:7.1f}x")
    print(
        f"  ratio numpy (fwd + bwd) / rankmodels (fwd + bwd) : {(t_np_fwd + t_np_bwd) / ours:7.1f}x"
    )
    print(f"  max |P - P_numpy| = {d_np:.1e}, max |grad - grad_numpy/log| = {d_grad:.1e}")
    print(
        f"  max |P - P_POT| converged = {d_pot:.1e}; after {n_iter} iterations "
        f"(POT rows first) = {iter_pot:.1e}"
    )


def ltr_part(lengths: list[int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    losses = {
        "SoftNDCG exact": lambda s, r: softndcg_loss(s, r, sigma=0.5),
        "SoftNDCG normal": lambda s, r: softndcg_loss(s, r, sigma=0.5, method="normal"),
        "PiRank NDCG@10": lambda s, r: pirank_loss(s, r, tau=1.0, k=10),
        "PiRank NDCG@10 multi-level (b=100)": lambda s, r: pirank_loss(
            s, r, tau=1.0, k=10, block_size=100
        ),
        "SinkProp (5 iterations)": lambda s, r: sinkprop_loss(s, r, sigma=0.5),
    }
    warm_s, warm_r = rng.normal(size=5), rng.integers(0, 3, 5).astype(float)
    for fn in losses.values():
        fn(warm_s, warm_r)
    print("== value + gradient, one query, seconds per call ==")
    head = "".join(f"{n:>11d}" for n in lengths)
    print(f"  {'loss / list length':<36}{head}   growth n^a")
    for name, fn in losses.items():
        times = []
        for n in lengths:
            s = rng.normal(size=n)
            r = rng.integers(0, 3, size=n).astype(float)
            repeat = max(1, min(50, int(2000 / n)))
            times.append(_time(lambda s=s, r=r, fn=fn: fn(s, r), repeat=repeat)[0])
        slope = np.polyfit(np.log(lengths[-3:]), np.log(times[-3:]), 1)[0]
        cells = "".join(f"{t:11.2e}" for t in times)
        print(f"  {name:<36}{cells}   a = {slope:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-matrices", type=int, default=10_000)
    parser.add_argument("--size", type=int, default=50)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--pot-sample", type=int, default=1000)
    parser.add_argument("--lengths", type=int, nargs="+", default=[10, 30, 100, 300, 1000])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sinkhorn_part(
        args.n_matrices,
        args.size,
        args.iterations,
        min(args.pot_sample, args.n_matrices),
        args.seed,
    )
    ltr_part(args.lengths, args.seed)


if __name__ == "__main__":
    main()
