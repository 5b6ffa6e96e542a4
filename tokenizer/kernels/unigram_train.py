"""Kernels of SentencePiece-style unigram training: the E-step (forward-backward expected counts), Viterbi piece
counts, second-best segmentations of pieces (for pruning) and the suffix-array helpers of the seed step. Pure-Python
twins live in :mod:`tokenizer.twins.unigram_train`.

Texts are packed Arrow-style: ``data`` uint8, ``offsets`` int64 (n + 1), ``weights`` int64 (n) how often each
text (a chunk) occurs. The lattice's units are UTF-8 characters (``byte_mode=False``; the data must be valid
UTF-8, as SentencePiece's normalizer guarantees) or single bytes (``byte_mode=True``). Pieces are matched through a
double-array trie (``units`` of :class:`tokenizer.kernels.double_array.DoubleArray`, values = piece ids, walked with
its ``step`` and ``unit_value``): one array read per byte, and the children of a node sit next to each other, so the
walks stay in cache even for a million seed pieces. A piece whose score is ``-inf`` (probability 0) is inactive
(pruned) and never matched, so one trie serves several EM rounds. Where no active single-unit piece starts at a
position, an unknown node of one unit with score ``unk_score`` is added, as SentencePiece's lattice does.

Expected counts are accumulated as int64 fixed point (``round(weight * marginal * scale)`` per lattice node), so
their sums are exact and independent of how the chunks are split into partitions.

Example (hand-checkable): pieces ``a`` (score log 0.5) and ``ab`` (log 0.25), ``b`` (log 0.25); text ``ab``
has paths a|b (0.125) and ab (0.25), so E[a] = E[b] = 1/3 and E[ab] = 2/3.
"""

from __future__ import annotations

import math

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.double_array import step, unit_value
from tokenizer.kernels.utf8 import char_length

NEG_INF = -np.inf
SMALLEST_UNSCALED = 2.0 ** -128  # forward/backward sums below this (or above its inverse) are rescaled by 2**k
LARGEST_UNSCALED = 2.0 ** 128


@kernel
def _unit_length(data, pos, end, byte_mode):
    if byte_mode:
        return 1
    return char_length(data, pos, end)


@kernel
def _edges_from(units, piece_weight, unk_weight, inactive, max_bytes, byte_mode, data, s, end, edge_end, edge_id,
                edge_weight, base):
    """Lattice edges leaving byte position ``s`` of ``data[:end]``, written to slots ``base, base + 1, ...`` of
    ``edge_end``/``edge_id``/``edge_weight``: active pieces (``piece_weight[id] != inactive``) shortest first,
    then the unknown node (id -1, ``unk_weight``) when no active single-unit piece starts here. Returns the
    number of edges. ``piece_weight``: log scores (``inactive`` = -inf) or probabilities (``inactive`` = 0.0)."""
    unit = _unit_length(data, s, end, byte_mode)
    n = 0
    has_unit_piece = False
    node = units[0]
    for k in range(s, min(end, s + max_bytes)):
        node = step(units, node, data[k])
        if node < 0:
            break
        pid = unit_value(units, node)
        if pid >= 0 and piece_weight[pid] != inactive:
            edge_end[base + n] = k + 1
            edge_id[base + n] = pid
            edge_weight[base + n] = piece_weight[pid]
            n += 1
            if k + 1 - s == unit:
                has_unit_piece = True
    if not has_unit_piece:
        edge_end[base + n] = s + unit
        edge_id[base + n] = -1
        edge_weight[base + n] = unk_weight
        n += 1
    return n


@kernel
def _rescale(values, first, last, exponent):
    """Multiply ``values[first:last + 1]`` by ``2**exponent`` (exact). Returns 0."""
    for q in range(first, last + 1):
        values[q] = math.ldexp(values[q], exponent)
    return 0


@kernel
def _normalizing_exponent(value):
    """The ``k`` with ``value * 2**k`` in ``[0.5, 1)`` when ``value`` (> 0) is outside the unscaled range, else
    0. ``_normalizing_exponent(2.0 ** -200)`` -> 199."""
    if SMALLEST_UNSCALED <= value <= LARGEST_UNSCALED:
        return 0
    return -math.frexp(value)[1]


# ---------------------------------------------------------------------------------------------------- E-step
@kernel
def expected_counts(units, piece_prob, unk_prob, max_bytes, byte_mode, data, offsets, weights, scale,
                    expected_out):
    """Add each chunk's expected piece counts, ``round(weight * P(node) * scale)`` per lattice node, to
    ``expected_out`` (int64, one slot per piece id); returns ``sum(weight * log Z)`` (float64) over the chunks.

    ``piece_prob`` float64 probabilities (``exp`` of the log scores; 0: inactive), ``unk_prob`` the unknown
    node's. Forward and backward sums are products and sums of probabilities, not log-sum-exps: each position's
    sum shares one power-of-two scale with the positions an edge can still reach, and the scale is shifted (by an
    exact ``2**k``) when a sum leaves ``[2**-128, 2**128]``, so nothing underflows on chunks of any length. The
    forward pass keeps each position's edges, the backward pass reuses them. See the module docstring for the
    example.
    """
    longest = 0
    for i in range(len(offsets) - 1):
        longest = max(longest, offsets[i + 1] - offsets[i])
    width = max_bytes + 2
    alpha = np.empty(longest + 1, np.float64)        # forward sums, scaled by 2**alpha_shift[s] once final
    alpha_shift = np.empty(longest + 1, np.int64)
    beta = np.empty(longest + 1, np.float64)         # backward sums, all in the current scale 2**beta_shift
    all_end = np.empty((longest + 1) * width, np.int32)  # edges of position s: slots s * width ...
    all_id = np.empty((longest + 1) * width, np.int32)
    all_prob = np.empty((longest + 1) * width, np.float64)
    edge_count = np.zeros(longest + 1, np.int64)
    objective = 0.0
    for i in range(len(offsets) - 1):
        length = offsets[i + 1] - offsets[i]
        if length == 0:
            continue
        chunk = data[offsets[i]:offsets[i + 1]]
        for p in range(length + 1):
            alpha[p] = 0.0
            beta[p] = 0.0
        alpha[0] = 1.0
        shift = 0
        for s in range(length):
            here = alpha[s]
            if here == 0.0:  # inside a character: no path ends here
                edge_count[s] = 0
                continue
            k = _normalizing_exponent(here)
            if k != 0:
                _rescale(alpha, s, min(length, s + width), k)
                shift += k
                here = alpha[s]
            alpha_shift[s] = shift
            base = s * width
            n = _edges_from(units, piece_prob, unk_prob, 0.0, max_bytes, byte_mode, chunk, s, length, all_end,
                            all_id, all_prob, base)
            edge_count[s] = n
            for e in range(base, base + n):
                alpha[all_end[e]] += here * all_prob[e]
        if alpha[length] == 0.0:  # cannot happen (unknown nodes join every character): nothing to count
            continue
        k = _normalizing_exponent(alpha[length])
        z = math.ldexp(alpha[length], k)
        z_shift = shift + k
        weight = np.float64(weights[i])
        beta[length] = 1.0
        beta_shift = 0
        for s in range(length - 1, -1, -1):
            if alpha[s] == 0.0:
                continue
            # P(edge) = alpha[s] 2**-alpha_shift[s] * prob * beta[end] 2**-beta_shift / (z 2**-z_shift)
            factor = math.ldexp(alpha[s] / z, z_shift - alpha_shift[s] - beta_shift) * weight * scale
            total = 0.0
            base = s * width
            for e in range(base, base + edge_count[s]):
                path = all_prob[e] * beta[all_end[e]]
                total += path
                pid = all_id[e]
                if pid >= 0 and path != 0.0:
                    expected_out[pid] += np.int64(round(factor * path))
            beta[s] = total
            k = _normalizing_exponent(total) if total > 0.0 else 0
            if k != 0:
                _rescale(beta, s, min(length, s + width), k)
                beta_shift += k
        objective += weight * (math.log(z) - z_shift * math.log(2.0))
    return objective


# ---------------------------------------------------------------------------------------------------- M-step
@kernel
def digamma(x):
    """Digamma by recurrence to x >= 7 and the asymptotic series (SentencePiece's formula; the same float
    operations, in the same order, as its Python twin ``tokenizer.twins.unigram_train.ref_digamma``).
    ``digamma(1.0)`` -> ``-0.5772156649...`` (minus the Euler-Mascheroni constant)."""
    result = 0.0
    while x < 7:
        result -= 1 / x
        x += 1
    x -= 0.5
    xx = 1.0 / x
    xx2 = xx * xx
    xx4 = xx2 * xx2
    return result + math.log(x) + xx2 / 24 - 7 * xx4 / 960 + 31 * xx4 * xx2 / 8064 - 127 * xx4 * xx4 / 30720


@kernel
def bayesian_scores(expected, keep, log_total, out):
    """``out[k] = digamma(expected[k]) - log_total`` where ``keep[k]``, ``-inf`` elsewhere (float64 arrays, bool
    mask): SentencePiece's Bayesian M-step. ``expected [3.0], keep [True], log_total digamma(4.6)`` ->
    ``[digamma(3) - digamma(4.6)]``."""
    for k in range(len(expected)):
        out[k] = digamma(expected[k]) - log_total if keep[k] else -np.inf


# ---------------------------------------------------------------------------------------------------- Viterbi
@kernel
def _viterbi_path(units, piece_score, unk_score, max_bytes, byte_mode, chunk, length, excluded_id, best,
                  back_start, back_id, edge_end, edge_id, edge_score):
    """Best path over ``chunk[:length]``, never using a piece with id ``excluded_id`` that spans the whole chunk.
    Fills ``best``/``back_*``; ties keep the path found first (shorter edges from earlier positions)."""
    for p in range(length + 1):
        best[p] = NEG_INF
        back_start[p] = -1
    best[0] = 0.0
    for s in range(length):
        if best[s] == NEG_INF:
            continue
        n = _edges_from(units, piece_score, unk_score, NEG_INF, max_bytes, byte_mode, chunk, s, length, edge_end,
                        edge_id, edge_score, 0)
        for e in range(n):
            if edge_id[e] == excluded_id and s == 0 and edge_end[e] == length:
                continue
            candidate = best[s] + edge_score[e]
            t = edge_end[e]
            if candidate > best[t]:
                best[t] = candidate
                back_start[t] = s
                back_id[t] = edge_id[e]


@kernel
def viterbi_counts(units, piece_score, unk_score, max_bytes, byte_mode, data, offsets, weights, freq_out):
    """Add ``weight`` to ``freq_out[id]`` (int64) for every piece on each chunk's Viterbi path; returns the
    weighted number of tokens (unknown nodes included)."""
    longest = 0
    for i in range(len(offsets) - 1):
        longest = max(longest, offsets[i + 1] - offsets[i])
    best = np.empty(longest + 1, np.float64)
    back_start = np.empty(longest + 1, np.int64)
    back_id = np.empty(longest + 1, np.int64)
    edge_end = np.empty(max_bytes + 2, np.int64)
    edge_id = np.empty(max_bytes + 2, np.int64)
    edge_score = np.empty(max_bytes + 2, np.float64)
    tokens = np.int64(0)
    for i in range(len(offsets) - 1):
        length = offsets[i + 1] - offsets[i]
        if length == 0:
            continue
        chunk = data[offsets[i]:offsets[i + 1]]
        _viterbi_path(units, piece_score, unk_score, max_bytes, byte_mode, chunk,
                      length, -2, best, back_start, back_id, edge_end, edge_id, edge_score)
        t = length
        while t > 0:
            pid = back_id[t]
            if pid >= 0:
                freq_out[pid] += weights[i]
            tokens += weights[i]
            t = back_start[t]
    return tokens


@kernel
def piece_alternatives(units, piece_score, unk_score, max_bytes, byte_mode,
                       piece_data, piece_offsets, piece_ids, status_out, alt_offsets_out, alt_ids_out):
    """SentencePiece's pruning preparation: how each piece would be segmented without itself.

    For piece ``i`` (bytes ``piece_data[piece_offsets[i]:piece_offsets[i+1]]``, id ``piece_ids[i]``):
    ``status_out[i]`` = 0 when it is one unit (no other segmentation: always kept), 1 when its own Viterbi path
    already splits it (it can go), 2 when it is its own best path; then its second-best path's ids (-1: unknown
    node) are ``alt_ids_out[alt_offsets_out[i]:alt_offsets_out[i+1]]`` (int64; ``alt_ids_out`` needs
    ``len(piece_data)`` slots). Example: pieces a, b, ab with ab the best for "ab" -> status 2, alternatives [a, b].
    """
    longest = 1
    for i in range(len(piece_offsets) - 1):
        longest = max(longest, piece_offsets[i + 1] - piece_offsets[i])
    best = np.empty(longest + 1, np.float64)
    back_start = np.empty(longest + 1, np.int64)
    back_id = np.empty(longest + 1, np.int64)
    edge_end = np.empty(max(max_bytes, longest) + 2, np.int64)
    edge_id = np.empty(max(max_bytes, longest) + 2, np.int64)
    edge_score = np.empty(max(max_bytes, longest) + 2, np.float64)
    path = np.empty(longest + 1, np.int64)
    written = 0
    alt_offsets_out[0] = 0
    for i in range(len(piece_offsets) - 1):
        chunk = piece_data[piece_offsets[i]:piece_offsets[i + 1]]
        length = piece_offsets[i + 1] - piece_offsets[i]
        if _unit_length(chunk, 0, length, byte_mode) >= length:
            status_out[i] = 0
            alt_offsets_out[i + 1] = written
            continue
        _viterbi_path(units, piece_score, unk_score, max(max_bytes, length),
                      byte_mode, chunk, length, piece_ids[i], best, back_start, back_id, edge_end, edge_id,
                      edge_score)
        own = piece_score[piece_ids[i]]
        if best[length] > own:
            status_out[i] = 1
        else:
            status_out[i] = 2
            n = 0
            t = length
            while t > 0:
                path[n] = back_id[t]
                n += 1
                t = back_start[t]
            for k in range(n):
                alt_ids_out[written + k] = path[n - 1 - k]
            written += n
        alt_offsets_out[i + 1] = written
    return written


@kernel
def pruning_losses(order, freq, status, alt_offsets, alt_ids, sentence_total, total, log_total, loss_out):
    """SentencePiece's pruning loss of each piece (``PruneSentencePieces``): for position ``i`` of ``order``
    (int64 piece ids) with ``status[i] == 2`` (int8, from :func:`piece_alternatives`) and ``freq[order[i]] > 0``
    (float64 Viterbi frequencies), ``loss_out[i]`` (float64) = ``f / sentence_total * (log f - log_total -
    sum(log(freq[a] + f) - log(total + f * (n - 1))))`` over its ``n`` alternatives ``a`` (-1: frequency 0);
    other positions get NaN. The alternatives are summed left to right, as the Python twin does.
    Example: f = 2, total = 10, alternatives with frequencies 3 and 4, sentence_total 5 -> 0.4 * (log 2 - log 10
    - (log 5 - log 12) - (log 6 - log 12))."""
    for i in range(len(order)):
        f = freq[order[i]]
        if f == 0.0 or status[i] != 2:
            loss_out[i] = np.nan
            continue
        start = alt_offsets[i]
        stop = alt_offsets[i + 1]
        logsum_alt = math.log(total + f * ((stop - start) - 1))
        logprob_alt = 0.0
        for j in range(start, stop):
            a = alt_ids[j]
            alt_freq = freq[a] if a >= 0 else 0.0
            logprob_alt += math.log(alt_freq + f) - logsum_alt
        loss_out[i] = (f / sentence_total) * ((math.log(f) - log_total) - logprob_alt)
    return 0


# ---------------------------------------------------------------------------------------------------- seeds
@kernel
def positions_by_symbol(text, first_symbol, group_starts, out_positions):
    """Counting sort of the positions of ``text`` (integer symbols) by their symbol, for the symbols
    ``first_symbol + g`` with a group ``g`` in ``group_starts`` (int64: where each group begins in
    ``out_positions``, then its end): group ``g`` gets their positions in order; positions of other symbols, and
    of symbols whose group is full (empty), are skipped. ``out_positions``: int32 or int64.
    Example: text [2, 0, 2, 1], first_symbol 1, group_starts [0, 1, 3] -> [3, 0, 2]."""
    cursor = group_starts[:-1].copy()
    groups = len(group_starts) - 1
    for position in range(len(text)):
        group = text[position] - first_symbol
        if 0 <= group < groups and cursor[group] < group_starts[group + 1]:
            out_positions[cursor[group]] = position
            cursor[group] += 1
    return 0


@kernel
def clipped_lcp(text, suffixes, limit, lcp_out):
    """``lcp_out[j]`` = length of the common prefix of the suffixes ``suffixes[j-1]`` and ``suffixes[j]`` of
    ``text`` (integer symbols, 0 = chunk separator, which never matches), at most ``limit``; ``lcp_out[0] = 0``.
    Example: text [1, 2, 0, 1, 2, 3, 0], suffixes [0, 3] -> lcp [0, 2]."""
    n = len(text)
    lcp_out[0] = 0
    for j in range(1, len(suffixes)):
        a = suffixes[j - 1]
        b = suffixes[j]
        k = 0
        while k < limit and a + k < n and b + k < n and text[a + k] != 0 and text[a + k] == text[b + k]:
            k += 1
        lcp_out[j] = k
    return 0


@kernel
def lcp_interval_nodes(lcp, min_depth, max_depth, out_left, out_right, out_depth):
    """Internal nodes of the suffix tree from an LCP array (bottom-up stack traversal): each node is a maximal
    interval ``[left, right]`` of sorted suffixes sharing ``depth`` symbols, two or more of them. Nodes with
    ``min_depth <= depth <= max_depth`` are written; returns their number.
    Example: lcp [0, 2, 1] (3 suffixes) -> nodes (0..1, depth 2) and (0..2, depth 1)."""
    n = len(lcp)
    stack_depth = np.empty(n + 1, np.int64)
    stack_left = np.empty(n + 1, np.int64)
    top = 0
    stack_depth[0] = 0
    stack_left[0] = 0
    count = 0
    for i in range(1, n + 1):
        current = lcp[i] if i < n else 0
        left = i - 1
        while current < stack_depth[top]:
            depth = stack_depth[top]
            left = stack_left[top]
            top -= 1
            if min_depth <= depth <= max_depth:
                out_left[count] = left
                out_right[count] = i - 1
                out_depth[count] = depth
                count += 1
        if current > stack_depth[top]:
            top += 1
            stack_depth[top] = current
            stack_left[top] = left
    return count


@kernel
def valid_pieces(text, starts, lengths, symbol_class, symbol_script, split_by_whitespace,
                 treat_whitespace_as_suffix, allow_whitespace_only_pieces, split_by_number, split_by_unicode_script,
                 split_digits, out):
    """SentencePiece's ``IsValidSentencePiece`` for the pieces ``text[starts[i]:starts[i]+lengths[i]]``.

    Per symbol: ``symbol_class`` (uint8) 0 = ordinary, 1 = the whitespace mark "▁", 2 = forbidden (separator,
    unknown/uncovered, NUL, space, tab), 3 = decimal digit; ``symbol_script`` (int32) its script id with
    Hiragana/Katakana already merged into Han, -2 for Inherited (takes the previous symbol's script).
    Writes 1 (valid) or 0 to ``out``.
    """
    any_script = -1
    for i in range(len(starts)):
        start = starts[i]
        size = lengths[i]
        all_ws = True
        for k in range(size):
            if symbol_class[text[start + k]] != 1:
                all_ws = False
                break
        ok = size > 0
        prev = any_script
        for pos in range(size):
            if not ok:
                break
            c = text[start + pos]
            kind = symbol_class[c]
            if kind == 2:
                ok = False
            elif kind == 1:
                if not allow_whitespace_only_pieces or not all_ws:
                    if treat_whitespace_as_suffix:
                        if (split_by_whitespace and pos < size - 1) or (
                                not split_by_whitespace and pos < size - 1 and pos == 0):
                            ok = False
                    else:
                        if (split_by_whitespace and pos > 0) or (
                                not split_by_whitespace and pos > 0 and pos == size - 1):
                            ok = False
            else:
                script = symbol_script[c]
                if script == -2:
                    script = prev
                if not split_by_number and kind == 3:
                    script = any_script
                if split_digits and kind == 3 and size > 1:
                    ok = False
                if split_by_unicode_script and script != any_script and prev != any_script and prev != script:
                    ok = False
                prev = script
        out[i] = 1 if ok else 0
    return 0
