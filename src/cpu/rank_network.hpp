#pragma once
// Selection networks for the small-window rank kernels (fast_rank_network.cpp, simd_rank.cpp): straight-line
// programs of min and max that give the sample of one rank of a window, built once per (window, rank).
//
// A program is in single-assignment form: values 0 .. inputs-1 are its inputs, value inputs + k is the
// result of ops[k] (the min or the max of two earlier values), and `outputs` names the values it yields.
// Min and max are exact on every key type, so a program gives the reference's sample bit for bit.
//
// The window's samples come in sorted lists (the element's columns, each sorted once per position and
// shared by the outputs whose windows hold it): `select_program` merges the lists pairwise with Batcher's
// odd-even merge (any lengths), keeps of each merged list only the positions that can still hold the rank
// (the others lie above or below it whatever the remaining lists hold), and ends with the rank of the union
// of two sorted lists as a min over maxes. Only the operations the selected value depends on are kept, so
// the unused half of most compare-exchanges costs nothing.
//
// Everything is constexpr: the kernels for the common squares take their programs at compile time (the values
// then live in registers), the others build them at run time and interpret them over blocks of vectors.
#include <algorithm>
#include <cstdint>
#include <vector>

namespace apron::cpu::rank_net {

enum class Kind : std::uint8_t { min, max };

struct Op {
    Kind kind = Kind::min;
    std::uint16_t a = 0, b = 0;  // the values it takes
};

struct Program {
    int inputs = 0;
    std::vector<Op> ops;
    std::vector<int> outputs;
};

// Records operations; finish() keeps those the outputs depend on, renumbered in order.
class Builder {
public:
    constexpr explicit Builder(int inputs) : inputs_(inputs) {}
    constexpr int min(int a, int b) { return add(Kind::min, a, b); }
    constexpr int max(int a, int b) { return add(Kind::max, a, b); }

    constexpr Program finish(const std::vector<int>& outputs) const {
        std::vector<char> needed(ops_.size(), 0);
        std::vector<int> pending(outputs);
        while (!pending.empty()) {
            const int v = pending.back();
            pending.pop_back();
            if (v < inputs_ || needed[std::size_t(v - inputs_)]) continue;
            needed[std::size_t(v - inputs_)] = 1;
            pending.push_back(ops_[std::size_t(v - inputs_)].a);
            pending.push_back(ops_[std::size_t(v - inputs_)].b);
        }
        std::vector<int> renamed(ops_.size(), -1);
        Program p;
        p.inputs = inputs_;
        auto name = [&](int v) { return v < inputs_ ? v : renamed[std::size_t(v - inputs_)]; };
        for (std::size_t k = 0; k < ops_.size(); ++k) {
            if (!needed[k]) continue;
            renamed[k] = inputs_ + int(p.ops.size());
            p.ops.push_back(Op{ops_[k].kind, std::uint16_t(name(ops_[k].a)), std::uint16_t(name(ops_[k].b))});
        }
        for (int o : outputs) p.outputs.push_back(name(o));
        return p;
    }

private:
    constexpr int add(Kind k, int a, int b) {
        ops_.push_back(Op{k, std::uint16_t(a), std::uint16_t(b)});
        return inputs_ + int(ops_.size()) - 1;
    }
    int inputs_;
    std::vector<Op> ops_;
};

using List = std::vector<int>;  // values in ascending order

constexpr List every_other(const List& v, std::size_t first) {
    List r;
    for (std::size_t i = first; i < v.size(); i += 2) r.push_back(v[i]);
    return r;
}

// Batcher's odd-even merge of two sorted lists of any lengths: merge the even-indexed and the odd-indexed
// halves, then one compare-exchange per interleaved pair.
constexpr List merge(Builder& b, const List& x, const List& y) {
    if (x.empty()) return y;
    if (y.empty()) return x;
    if (x.size() == 1 && y.size() == 1) return {b.min(x[0], y[0]), b.max(x[0], y[0])};
    const List even = merge(b, every_other(x, 0), every_other(y, 0));
    const List odd = merge(b, every_other(x, 1), every_other(y, 1));
    List r{even[0]};
    std::size_t i = 0;
    for (; i < odd.size() && i + 1 < even.size(); ++i) {
        r.push_back(b.min(odd[i], even[i + 1]));
        r.push_back(b.max(odd[i], even[i + 1]));
    }
    for (std::size_t k = i; k < odd.size(); ++k) r.push_back(odd[k]);
    for (std::size_t k = i + 1; k < even.size(); ++k) r.push_back(even[k]);
    return r;
}

constexpr List sort_values(Builder& b, const List& v) {
    if (v.size() <= 1) return v;
    const std::size_t half = v.size() / 2;
    return merge(b, sort_values(b, List(v.begin(), v.begin() + std::ptrdiff_t(half))),
                 sort_values(b, List(v.begin() + std::ptrdiff_t(half), v.end())));
}

// The k-th smallest (0-based) of the union of sorted x and y: min over i of max(x[i-1], y[k-i]), where a
// position before a list's start is -infinity (the term is the other sample) and one past its end is
// +infinity (the term drops out).
constexpr int kth_of_two(Builder& b, const List& x, const List& y, int k) {
    int best = -1;
    for (int i = 0; i <= k + 1; ++i) {
        const int xi = i - 1, yi = k - i;
        if (xi >= int(x.size()) || yi >= int(y.size()) || (xi < 0 && yi < 0)) continue;
        const int term = xi < 0 ? y[std::size_t(yi)] : yi < 0 ? x[std::size_t(xi)] : b.max(x[std::size_t(xi)], y[std::size_t(yi)]);
        best = best < 0 ? term : b.min(best, term);
    }
    return best;
}

// The value of rank r of the union of sorted lists. The shortest list is kept for the end (the two-list
// rank is cheapest against a short list); the others merge shortest first, each merged list cut to the
// positions [r - rest, r] (rest: the samples of every other list) that can still be the rank.
// Stable (equal lengths keep their order, so programs do not depend on the library's sort): insertion sort.
constexpr void sort_by_length(std::vector<List>& lists) {
    for (std::size_t i = 1; i < lists.size(); ++i)
        for (std::size_t j = i; j > 0 && lists[j].size() < lists[j - 1].size(); --j) std::swap(lists[j], lists[j - 1]);
}

// The median of three sorted triples is the median of (the largest minimum, the median of the medians, the
// smallest maximum): sorting the rows of the 3 x 3 matrix of sorted columns leaves the median on its
// anti-diagonal. 12 operations where the merges take 16.
constexpr int median_of_three_triples(Builder& b, const std::vector<List>& l) {
    auto med3 = [&](int x, int y, int z) { return b.max(b.min(x, y), b.min(b.max(x, y), z)); };
    const int low = b.max(b.max(l[0][0], l[1][0]), l[2][0]);
    const int high = b.min(b.min(l[0][2], l[1][2]), l[2][2]);
    return med3(low, med3(l[0][1], l[1][1], l[2][1]), high);
}

constexpr int select_sorted(Builder& b, std::vector<List> lists, int r) {
    std::erase_if(lists, [](const List& l) { return l.empty(); });
    sort_by_length(lists);
    if (lists.size() == 3 && r == 4 && lists[0].size() == 3 && lists[2].size() == 3) return median_of_three_triples(b, lists);
    if (lists.size() == 1) return lists[0][std::size_t(r)];
    const List aside = lists.front();
    lists.erase(lists.begin());
    while (lists.size() > 1) {
        sort_by_length(lists);
        const List merged = merge(b, lists[0], lists[1]);
        lists.erase(lists.begin(), lists.begin() + 2);
        int rest = int(aside.size());
        for (const List& l : lists) rest += int(l.size());
        const int lo = std::max(0, r - rest), hi = std::min(int(merged.size()) - 1, r);
        lists.push_back(List(merged.begin() + lo, merged.begin() + hi + 1));
        r -= lo;
    }
    return kth_of_two(b, lists[0], aside, r);
}

// Inputs: list 0's values in ascending order, then list 1's, ...; one output, the value of rank r.
constexpr Program select_program(const std::vector<int>& list_sizes, int r) {
    int inputs = 0;
    std::vector<List> lists;
    for (int size : list_sizes) {
        List l;
        for (int i = 0; i < size; ++i) l.push_back(inputs++);
        lists.push_back(l);
    }
    Builder b(inputs);
    return b.finish({select_sorted(b, lists, r)});
}

// Positions lo .. hi of the union of sorted lists, in order: the lists merge shortest first, each merged list
// cut to the positions [lo - rest, hi] that can still reach the window.
constexpr List window_sorted(Builder& b, std::vector<List> lists, int lo, int hi) {
    std::erase_if(lists, [](const List& l) { return l.empty(); });
    while (lists.size() > 1) {
        sort_by_length(lists);
        const List merged = merge(b, lists[0], lists[1]);
        lists.erase(lists.begin(), lists.begin() + 2);
        int rest = 0;
        for (const List& l : lists) rest += int(l.size());
        const int first = std::max(0, lo - rest), last = std::min(int(merged.size()) - 1, hi);
        lists.push_back(List(merged.begin() + first, merged.begin() + last + 1));
        lo -= first;
        hi -= first;
    }
    return List(lists[0].begin() + lo, lists[0].begin() + hi + 1);
}

// Two outputs whose k x k windows share k - 1 rows (vertical neighbours), each row a sorted list of k: the
// rank r of either window lies at positions [r - k, r] of the shared rows' union (the row of its own adds at
// most k below), so those are merged once (square_window_program: inputs the k - 1 shared rows, row i's
// values at i * k ..), and each output takes rank r - lo of that window and its own row
// (square_finish_program: inputs the window, then the row).
constexpr int square_window_low(int k, int r) { return std::max(0, r - k); }
constexpr int square_window_high(int k, int r) { return std::min(r, k * (k - 1) - 1); }
// The 3 x 3 median by the anti-diagonal rule of median_of_three_triples, shared the same way: the pair's two
// common rows give the larger of their minima, the smaller of their maxima and their medians in order (4
// operations); each output then takes its own row's three (8), 20 a pair where the merges take 22.
constexpr bool square_pair_by_diagonal(int k, int r) { return k == 3 && r == 4; }

constexpr Program square_window_program(int k, int r) {
    if (square_pair_by_diagonal(k, r)) {  // rows (lo, mid, hi): inputs 0..2 and 3..5
        Builder b(6);
        return b.finish({b.max(0, 3), b.min(2, 5), b.min(1, 4), b.max(1, 4)});
    }
    std::vector<List> rows;
    for (int i = 0; i < k - 1; ++i) {
        List l;
        for (int j = 0; j < k; ++j) l.push_back(i * k + j);
        rows.push_back(l);
    }
    Builder b(k * (k - 1));
    return b.finish(window_sorted(b, rows, square_window_low(k, r), square_window_high(k, r)));
}
constexpr Program square_finish_program(int k, int r) {
    if (square_pair_by_diagonal(k, r)) {  // inputs: the window's 4 values, then the row's (lo, mid, hi)
        Builder b(7);
        const int low = b.max(0, 4), high = b.min(1, 6), mid = b.max(2, b.min(3, 5));
        return b.finish({b.max(b.min(low, mid), b.min(b.max(low, mid), high))});
    }
    const int w = square_window_high(k, r) - square_window_low(k, r) + 1;
    return select_program({w, k}, r - square_window_low(k, r));
}

// Sorts n inputs: outputs in ascending order.
constexpr Program sort_program(int n) {
    Builder b(n);
    List v;
    for (int i = 0; i < n; ++i) v.push_back(i);
    return b.finish(sort_values(b, v));
}

} // namespace apron::cpu::rank_net
