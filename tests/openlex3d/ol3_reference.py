"""Slow, loop-based reference implementations of the OpenLex3D metrics, written from the spec's text.

They share nothing with the vectorised code except the categories loader: labels are matched with
``Categories.match`` (strings), ranks are counted label by label, matching is done per GT instance. Used by the
randomised self-consistency tests on tie-free scenes.
"""

from __future__ import annotations

import math

import numpy as np

CATS = ("synonyms", "depictions", "vis_sim", "clutter", "missing", "incorrect")
EXCLUDED = ("wall", "floor", "ceiling", "doorframe", "ledge", "windowledge")
THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.25)
PAPER_THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.25)


def norm(s):
    return s.replace(" ", "")


def cosine(f, t):
    f = np.asarray(f, np.float64)
    t = np.asarray(t, np.float64)
    return float(f @ t) / (max(np.linalg.norm(f), 1e-8) * max(np.linalg.norm(t), 1e-8))


def downsample(points, index, voxel):
    if voxel is None:
        return [tuple(p) for p in points], list(index)
    groups = {}
    for j, p in enumerate(points):
        key = tuple(math.floor(c / voxel) for c in p)
        groups.setdefault(key, []).append(j)
    out_pts, out_rows = [], []
    for key in sorted(groups):
        members = groups[key]
        centroid = np.mean([points[j] for j in members], axis=0)
        d = [float(np.sum((np.asarray(p) - centroid) ** 2)) for p in points]
        best = min(range(len(points)), key=lambda j: (d[j], j))
        out_pts.append(tuple(centroid))
        out_rows.append(int(index[best]))
    return out_pts, out_rows


def ranking(logits):
    """Prompt indices in stable descending order of the logits."""
    return sorted(range(len(logits)), key=lambda m: (-logits[m], m))


def _evaluated(cats, oid, excluded):
    if oid == -100 or oid not in cats:
        return False
    syn = [norm(s) for s in cats[oid].synonyms]
    return bool(syn) and not any(norm(e) in syn for e in excluded)


def _matched(points, rows, features, text, gt_points):
    """Per GT point: (distance, logits of the nearest downsampled prediction)."""
    out = []
    for g in gt_points:
        d = [math.dist(g, p) for p in points]
        i = min(range(len(points)), key=lambda j: d[j])
        out.append((d[i], [cosine(features[rows[i]], t) for t in text]))
    return out


def topn(pred_points, features, index, text, prompts, gt_points, gt_ids, cats, n, voxel, thr, excluded=EXCLUDED):
    pts, rows = downsample(pred_points, index, voxel)
    matched = _matched(pts, rows, features, text, gt_points)
    per_point = []
    for (dist, logits), oid in zip(matched, gt_ids, strict=True):
        oid = int(oid)
        if not _evaluated(cats, oid, excluded):
            per_point.append(-1)
        elif dist > thr:
            per_point.append(4)
        else:
            labels = ranking(logits)[:n]
            per_point.append(min(CATS.index(cats.match(oid, prompts[m])) for m in labels))
    objects = sorted({int(o) for o in gt_ids if _evaluated(cats, int(o), excluded)})
    fr = []
    for o in objects:
        codes = [c for c, g in zip(per_point, gt_ids, strict=True) if int(g) == o]
        fr.append([codes.count(c) / len(codes) for c in range(6)])
    freq = np.mean(fr, axis=0) if fr else np.full(6, np.nan)
    return dict(zip(CATS, freq, strict=True)), per_point, objects


def topn_iou(pred_points, features, index, text, prompts, gt_points, gt_ids, cats, n, voxel, thr, excluded=EXCLUDED):
    """The IoU form by counting, object by object and point by point: per evaluated object ``o`` and tier ``c``,
    TP = o's points within ``thr`` whose best category for o is c, FN = o's other points, FP = points of other
    listed objects within ``thr`` whose labels are incorrect for their own object and whose best category for o is
    c. Returns ``(ious by tier, {object: (tp, fp, fn, per-tier IoU)})``."""
    pts, rows = downsample(pred_points, index, voxel)
    matched = _matched(pts, rows, features, text, gt_points)

    def best(oid, labels):
        return min(CATS.index(cats.match(oid, prompts[m])) for m in labels)

    objects = sorted({int(o) for o in gt_ids if _evaluated(cats, int(o), excluded)})
    per_obj = {}
    for o in objects:
        tp, fp, n_o = [0] * 4, [0] * 4, 0
        for (dist, logits), g in zip(matched, gt_ids, strict=True):
            g = int(g)
            if g not in cats:
                continue
            labels = ranking(logits)[:n]
            if g == o:
                n_o += 1
                if dist <= thr and best(o, labels) < 4:
                    tp[best(o, labels)] += 1
            elif dist <= thr and best(g, labels) == 5 and best(o, labels) < 4:
                fp[best(o, labels)] += 1
        fn = [n_o - t for t in tp]
        per_obj[o] = (tp, fp, fn, [t / (t + f + m) for t, f, m in zip(tp, fp, fn, strict=True)])
    ious = np.mean([v[3] for v in per_obj.values()], axis=0) if per_obj else np.full(4, np.nan)
    return dict(zip(CATS[:4], ious, strict=True)), per_obj


def set_ranking(pred_points, features, index, text, prompts, gt_points, gt_ids, cats, voxel, compat):
    pts, rows = downsample(pred_points, index, voxel)
    matched = _matched(pts, rows, features, text, gt_points)
    sp = [norm(p) for p in prompts]
    big_l = len(prompts) - 1
    per_obj = {}
    for o in sorted({int(g) for g in gt_ids}):
        if o not in cats:
            continue
        obj = cats[o]
        s_idx = [sp.index(norm(s)) for s in obj.synonyms if norm(s) in sp]
        dv_idx = [sp.index(norm(s)) for s in list(obj.depictions) + list(obj.vis_sim) if norm(s) in sp]
        if not s_idx and not dv_idx:
            continue
        boxes = [(0, len(s_idx) - 1)] * len(s_idx) + [(len(s_idx), len(s_idx) + len(dv_idx) - 1)] * len(dv_idx)
        is_syn = [True] * len(s_idx) + [False] * len(dv_idx)
        entries = []  # per point: list of (is_syn, left, right, score)
        for (_, logits), g in zip(matched, gt_ids, strict=True):
            if int(g) != o:
                continue
            order = ranking(logits)
            point = []
            for j, (lo, hi), syn in zip(s_idx + dv_idx, boxes, is_syn, strict=True):
                k = order.index(j)
                left = 1 + min(0, (k - lo) / (lo + 1e-8))
                right = 1.0 if hi >= big_l else 1 - max(0, (k - hi) / (big_l - hi))
                point.append((syn, left, right, min(left, right)))
            entries.append(point)
        flat = [e for p in entries for e in p]
        viol = [entries[-1]] if compat == "toolkit" else entries
        vflat = [e for p in viol for e in p]

        def mean(values):
            return float(np.mean(values)) if values else float("nan")

        per_obj[o] = [
            mean([e[3] for e in flat]),
            mean([e[3] for e in flat if e[0]]),
            mean([e[3] for e in flat if not e[0]]),
            mean([float(e[3] == 1) for e in vflat if e[0]]),
            mean([float(e[3] == 1) for e in vflat if not e[0]]),
            mean([e[2] for e in vflat if e[0] and e[2] < 1]),
            mean([e[1] for e in vflat if not e[0] and e[1] < 1]),
            mean([e[2] for e in vflat if not e[0] and e[2] < 1]),
        ]
    cols = np.array(list(per_obj.values())) if per_obj else np.full((0, 8), np.nan)
    scene = [float(np.mean(c[~np.isnan(c)])) if (~np.isnan(c)).any() else float("nan") for c in cols.T]
    return scene, per_obj


def ap(entries, hard_fn, n_gt, n_pred):
    """AP from (score, is_tp) entries, written with explicit loops from the spec's formula."""
    if n_gt == 0:
        return float("nan")
    if n_pred == 0 or not entries:
        return 0.0
    entries = sorted(entries, key=lambda e: e[0])
    n = len(entries)
    total = sum(t for _, t in entries)
    ps, rs = [], []
    seen = set()
    for i, (s, _) in enumerate(entries):
        if s in seen:
            continue
        seen.add(s)
        before = sum(t for _, t in entries[:i])
        tp = total - before
        fp = n - i - tp
        fn = before + hard_fn
        ps.append(tp / (tp + fp))
        rs.append(tp / (tp + fn))
    ps.append(1.0)
    rs.append(0.0)
    out = 0.0
    for j in range(len(ps)):
        prev = rs[j - 1] if j > 0 else rs[0]
        nxt = rs[j + 1] if j + 1 < len(rs) else 0.0
        out += ps[j] * (prev - nxt) / 2
    return out


def retrieval(pred_points, features, index, qfeat, queries, gt_points, gt_ids, top_k, align, thresholds=THRESHOLDS):
    k_rows = len(features)
    masks = {m: set() for m in range(k_rows)}
    for g, gp in enumerate(gt_points):
        for p, pp in enumerate(pred_points):
            if index[p] >= 0 and sum((a - b) ** 2 for a, b in zip(gp, pp, strict=True)) < align:
                masks[int(index[p])].add(g)
    gt_sets = {}
    for g, o in enumerate(gt_ids):
        gt_sets.setdefault(int(o), set()).add(g)
    preds = []  # per query: list of (row, conf)
    for q in range(len(queries)):
        s = [(cosine(features[m], qfeat[q]) + 1) / 2 for m in range(k_rows)]
        lo, hi = min(s), max(s)
        c = [(v - lo) / max(hi - lo, 1e-8) for v in s]
        order = sorted(range(k_rows), key=lambda m: (-c[m], m))[:top_k]
        preds.append([(m, c[m]) for m in order if masks[m]])
    gts = [(qi, o) for qi, q in enumerate(queries) for o in q.object_ids if o in gt_sets]
    n_pred = sum(len(p) for p in preds)
    result = []
    for th in thresholds:
        used = set()
        entries, hard = [], 0
        for qi, o in gts:
            current, found = None, False
            for m, conf in preds[qi]:
                if (qi, m) in used:
                    continue
                inter = len(gt_sets[o] & masks[m])
                iou = inter / (len(gt_sets[o]) + len(masks[m]) - inter)
                if inter > 0 and iou > th:
                    if found:
                        entries.append((min(current, conf), False))
                        current = max(current, conf)
                    else:
                        found, current = True, conf
                        used.add((qi, m))
            if found:
                entries.append((current, True))
            else:
                hard += 1
        for qi, plist in enumerate(preds):
            for m, conf in plist:
                hit = False
                for qj, o in gts:
                    if qj != qi:
                        continue
                    inter = len(gt_sets[o] & masks[m])
                    if inter > 0 and inter / (len(gt_sets[o]) + len(masks[m]) - inter) > th:
                        hit = True
                if not hit:
                    entries.append((conf, False))
        result.append(ap(entries, hard, len(gts), n_pred))
    return result
