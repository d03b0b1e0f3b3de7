#!/usr/bin/env python3
"""Writes src/cuda/rank_networks.cuh: the min/max networks of the small square median kernels (rank_tile.cuh).

    python3 src/cuda/rank_networks.py > src/cuda/rank_networks.cuh

One network computes the medians of a thread's tile of outputs, G adjacent pixels x T adjacent rows, of a W x W
window, from the (G + W - 1) x (T + W - 1) samples they read. It is built as A. Adams, "Fast median filters using
separable sorting networks" (ACM TOG 40(4), 2021) describes:
  - the tile is split in halves recursively (along the side whose windows differ the least); each node of that
    tree holds the sorted list of the samples every output under it reads (the intersection of their windows),
    made by merging its parent's list with the samples the node adds (a strip of columns or rows, sorted);
  - sorted pieces are made once and shared: column segments from dyadic row intervals, strips from dyadic
    groups of columns (memoised);
  - merges are Batcher's odd-even merge of sorted lists of any lengths; each node keeps only the ranks some
    output below it can still take (an element below rank lo - |strip| or above hi of the parent cannot become a
    child's rank lo..hi), so the lists shrink towards the leaves;
  - at the end, comparators whose outputs nothing reads are dropped, and a comparator of which only the
    minimum (maximum) is read becomes one min (max).
Counts (min/max operations per output, W = 3, 5, 7 at G = 4, T = 2): 19.0, 65.8, 143.8 (a single 7x7 median
alone: 586). Each output is verified against sorting on random inputs when the file is written.
"""
import random
import sys

sys.setrecursionlimit(20000)


class Net:
    def __init__(self):
        self.ops = []  # (a, b, lo, hi): lo = min(a, b), hi = max(a, b)
        self.n = 0
        self.inputs = {}  # wire -> (k, y)

    def wire(self):
        self.n += 1
        return self.n - 1

    def ce(self, a, b):
        lo, hi = self.wire(), self.wire()
        self.ops.append((a, b, lo, hi))
        return lo, hi

    def merge(self, a, b):
        """Batcher's odd-even merge of sorted lists of any lengths."""
        if not a:
            return list(b)
        if not b:
            return list(a)
        if len(a) == 1 and len(b) == 1:
            return list(self.ce(a[0], b[0]))
        c = self.merge(a[0::2], b[0::2])
        d = self.merge(a[1::2], b[1::2])
        out, ci, di = [c[0]], 1, 0
        while ci < len(c) or di < len(d):
            if ci < len(c) and di < len(d):
                out += self.ce(d[di], c[ci])
                ci += 1
                di += 1
            elif di < len(d):
                out.append(d[di])
                di += 1
            else:
                out.append(c[ci])
                ci += 1
        return out


class Ranged:
    """Positions off .. off + len(w) - 1 of the sorted order of a multiset of n samples."""

    def __init__(self, w, off, n):
        self.w, self.off, self.n = w, off, n

    def trim(self, lo, hi):
        a, b = max(lo, self.off), min(hi, self.off + len(self.w) - 1)
        return Ranged(self.w[a - self.off:b - self.off + 1], a, self.n)


def ranged_merge(net, a, b, lo, hi):
    """Ranks lo..hi of the union of a and b. An element of a below rank lo - b.n cannot reach rank lo (at most b.n
    elements of b come before it), nor one above hi; the same for b."""
    a2, b2 = a.trim(lo - b.n, hi), b.trim(lo - a.n, hi)
    merged = Ranged(net.merge(a2.w, b2.w), a2.off + b2.off, a.n + b.n)
    return merged.trim(lo, hi)


def tile_network(w, g, t, rank, shift=0):
    net = Net()
    r = w // 2
    x = {}
    for k in range(g + w - 1):
        for y in range(t + w - 1):
            x[(k, y)] = net.wire()
            net.inputs[x[(k, y)]] = (k, y)
    col_memo, group_memo = {}, {}

    def column(k, r0, r1):
        key = (k, r0, r1)
        if key not in col_memo:
            if r0 == r1:
                col_memo[key] = [x[(k, r0)]]
            else:
                step = 1
                while step * 2 < r1 - r0 + 1:
                    step *= 2
                m = None
                while m is None:
                    c = ((r0 + shift) // step + 1) * step - shift
                    if r0 < c <= r1:
                        m = c
                    step //= 2
                col_memo[key] = net.merge(column(k, r0, m - 1), column(k, m, r1))
        return col_memo[key]

    def group(pieces):
        if pieces not in group_memo:
            if len(pieces) == 1:
                group_memo[pieces] = column(*pieces[0])
            else:
                ks = [p[0] for p in pieces]
                lo, hi = min(ks), max(ks)
                if lo == hi:
                    m = len(pieces) // 2
                else:
                    step = 64
                    while not (lo < ((lo + shift) // step + 1) * step - shift <= hi):
                        step //= 2
                    cut = ((lo + shift) // step + 1) * step - shift
                    m = sum(1 for p in pieces if p[0] < cut)
                group_memo[pieces] = net.merge(group(pieces[:m]), group(pieces[m:]))
        return group_memo[pieces]

    def region(g0, g1, t0, t1):  # columns and rows every output of the block reads
        return (g1, g0 + w - 1, t1, t0 + w - 1)

    def size(reg):
        return max(0, reg[1] - reg[0] + 1) * max(0, reg[3] - reg[2] + 1)

    def pieces(reg, parent):
        c0, c1, r0, r1 = reg
        out = []
        for k in range(c0, c1 + 1):
            ys = [y for y in range(r0, r1 + 1)
                  if not (parent and parent[0] <= k <= parent[1] and parent[2] <= y <= parent[3])]
            if not ys:
                continue
            run = [ys[0]]
            for y in ys[1:]:
                if y == run[-1] + 1:
                    run.append(y)
                else:
                    out.append((k, run[0], run[-1]))
                    run = [y]
            out.append((k, run[0], run[-1]))
        return tuple(out)

    class Node:
        pass

    def build(g0, g1, t0, t1, parent):
        nd = Node()
        nd.reg, nd.parent, nd.kids, nd.leaf = region(g0, g1, t0, t1), parent, [], None
        if g0 == g1 and t0 == t1:
            nd.leaf = (g0, t0)
            return nd
        split_x = g1 > g0 and (t1 == t0 or (g1 - g0) * w >= (t1 - t0) * w)
        if split_x:
            m = (g0 + g1) // 2
            nd.kids = [build(g0, m, t0, t1, nd.reg), build(m + 1, g1, t0, t1, nd.reg)]
        else:
            m = (t0 + t1) // 2
            nd.kids = [build(g0, g1, t0, m, nd.reg), build(g0, g1, m + 1, t1, nd.reg)]
        return nd

    root = build(0, g - 1, 0, t - 1, None)

    def need(nd):
        nd.n = size(nd.reg)
        if nd.leaf:
            nd.lo = nd.hi = rank
            return
        lo, hi = 1 << 30, -1
        for c in nd.kids:
            need(c)
            lo, hi = min(lo, c.lo - (c.n - nd.n)), max(hi, c.hi)
        nd.lo, nd.hi = max(lo, 0), min(hi, nd.n - 1)

    need(root)
    outs = {}

    def make(nd, parent):
        ps = pieces(nd.reg, nd.parent if parent else None)
        s = Ranged(group(ps), 0, sum(p[2] - p[1] + 1 for p in ps)) if ps else Ranged([], 0, 0)
        lst = s.trim(nd.lo, nd.hi) if parent is None else ranged_merge(net, parent, s, nd.lo, nd.hi)
        if nd.leaf:
            outs[nd.leaf] = lst.w[rank - lst.off]
            return
        for c in nd.kids:
            make(c, lst)

    make(root, None)
    return net, outs


def emit(net, outs, w, g, t, rank, name):
    """The pruned program as a device function; returns its text and its count of min/max operations."""
    needed = set(outs.values())
    keep = []
    for a, b, lo, hi in reversed(net.ops):
        nl, nh = lo in needed, hi in needed
        if nl or nh:
            needed.update((a, b))
            keep.append((a, b, lo if nl else None, hi if nh else None))
    keep.reverse()
    # verify the pruned program
    for _ in range(40):
        vals = {kv: random.randint(0, 40) for kv in net.inputs.values()}
        v = {wire: vals[kv] for wire, kv in net.inputs.items()}
        for a, b, lo, hi in keep:
            if lo is not None:
                v[lo] = min(v[a], v[b])
            if hi is not None:
                v[hi] = max(v[a], v[b])
        for (gg, tt), wire in outs.items():
            window = sorted(vals[(gg + i, tt + j)] for i in range(w) for j in range(w))
            assert v[wire] == window[rank], (name, gg, tt)
    lines, loaded, ops = [], set(), 0

    def ref(wire):
        if wire in net.inputs and wire not in loaded:
            loaded.add(wire)
            k, y = net.inputs[wire]
            lines.append("    const u32 v%d = ld(%d, %d);" % (wire, k, y))
        return "v%d" % wire

    for a, b, lo, hi in keep:
        ra, rb = ref(a), ref(b)
        if lo is not None:
            lines.append("    const u32 v%d = Op::mn(%s, %s);" % (lo, ra, rb))
            ops += 1
        if hi is not None:
            lines.append("    const u32 v%d = Op::mx(%s, %s);" % (hi, ra, rb))
            ops += 1
    for (gg, tt), wire in sorted(outs.items()):
        lines.append("    out[%d] = %s;" % (tt * g + gg, ref(wire)))
    head = ("// %dx%d median (rank %d), %d pixels x %d rows: %d min/max (%.1f an output), %d loads.\n"
            "template <class Op, class Ld>\n"
            "__device__ __forceinline__ void %s(const Ld& ld, u32 (&out)[%d]) {\n"
            % (w, w, rank, g, t, ops, ops / (g * t), len(loaded), name, g * t))
    return head + "\n".join(lines) + "\n}\n", ops


def main():
    random.seed(1)
    configs = [(3, 4, 2), (5, 4, 2), (7, 4, 2)]
    print("#pragma once")
    print("// Generated by src/cuda/rank_networks.py (the method is described there); do not edit.")
    print("// Each network: ld(k, y) is the sample of column k (0 .. G + W - 2) and row y (0 .. T + W - 2) of the")
    print("// thread's tile; out[t * G + g] the median of the window whose top-left sample is (g, t).")
    print("// Op::mn / Op::mx: the ordered minimum and maximum of two words (u16 pairs or u32 keys).")
    print("#include <cstdint>")
    print()
    print("namespace apron::cuda::rank_net {")
    print()
    print("using u32 = std::uint32_t;")
    print()
    for w, g, t in configs:
        # the dyadic pieces' alignment (shift) changes what is shared: the cheapest of the four
        best = None
        for shift in range(4):
            net, outs = tile_network(w, g, t, w * w // 2, shift)
            text, ops = emit(net, outs, w, g, t, w * w // 2, "median_%dx%d" % (w, w))
            if best is None or ops < best[1]:
                best = (text, ops)
        text, ops = best
        print(text)
        print("Median %dx%d: %.2f min/max an output" % (w, w, ops / (g * t)), file=sys.stderr)
    print("} // namespace apron::cuda::rank_net")


if __name__ == "__main__":
    main()
