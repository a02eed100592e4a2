# ward_charts.py — E2B's chart extraction, inside the sandbox: what a shown
# matplotlib figure draws, as the `chart` object of E2B's code interpreter
# (e2b-dev/code-interpreter, chart_data_extractor/e2b_charts, MIT; research
# note e2b-round2 §7.2).  The same rules and the same shapes as its
# pydantic models dump them (every field, None as null), written with the
# standard library and matplotlib only: the template need not have pydantic.
# ward_kernel.py runs it once, on the first figure, and calls
# chart_figure_to_dict(figure).
import re
from datetime import date
from decimal import Decimal, localcontext


def dynamic_round(number):
    d = Decimal(str(number))
    with localcontext() as ctx:
        ctx.prec = max(1, 8 - d.adjusted())  # 8 digits of precision
        return +d


def is_grid_line(line):
    x, y = line.get_xdata(), line.get_ydata()
    if len(x) != 2 or len(y) != 2:
        return False
    return bool(x[0] == x[1] or y[0] == y[1])


def date_converter(converter):
    import matplotlib.dates
    cls = getattr(matplotlib.dates, "_SwitchableDateConverter", None)
    return cls is not None and isinstance(converter, cls)


def axis_converter(axis):
    get = getattr(axis, "get_converter", None)
    return get() if callable(get) else getattr(axis, "converter", None)


def num(v):
    return v if isinstance(v, str) else float(v)


def chart_base(ax, kind):
    title = ax.get_title() if ax is not None else None
    return {"type": kind, "title": title or None, "elements": []}


def chart_2d(ax, kind):
    c = chart_base(ax, kind)
    xl, yl = ax.get_xlabel() or None, ax.get_ylabel() or None
    c.update({"x_label": xl, "y_label": yl, "x_unit": None, "y_unit": None})
    regex = r"\s\((.*?)\)|\[(.*?)\]"
    for label, key in ((xl, "x_unit"), (yl, "y_unit")):
        m = re.search(regex, label) if label else None
        if m:
            c[key] = m.group(1) or m.group(2)
    return c


def change_orientation(c):
    c["x_label"], c["y_label"] = c["y_label"], c["x_label"]
    c["x_unit"], c["y_unit"] = c["y_unit"], c["x_unit"]


def ticks_info(converter, ticks):
    if date_converter(converter):
        import matplotlib.dates
        return [matplotlib.dates.num2date(t).isoformat() for t in ticks]
    if len(ticks) and isinstance(ticks[0], (int, float)):
        return [float(t) for t in ticks]
    return list(ticks)


def detect_scale(converter, scale, ticks, labels):
    if date_converter(converter):
        return "datetime"
    if scale != "linear":
        return scale
    for i, (tick, label) in enumerate(zip(ticks, labels)):
        if isinstance(tick, (int, float)) and tick == i and str(i) != label:
            continue
        return "linear"
    return "categorical"


def point(v):
    import numpy
    if isinstance(v, date):
        return v.isoformat()
    if isinstance(v, numpy.datetime64):
        return str(v.astype("datetime64[s]").astype(str))
    return num(v)


def point_chart(ax, kind):
    c = chart_2d(ax, kind)
    for axis, get_ticks, get_labels, get_scale, p in (
            (ax.xaxis, ax.get_xticks, ax.get_xticklabels, ax.get_xscale, "x"),
            (ax.yaxis, ax.get_yticks, ax.get_yticklabels, ax.get_yscale, "y")):
        conv = axis_converter(axis)
        labels = [t.get_text() for t in get_labels()]
        ticks = ticks_info(conv, get_ticks())
        c[p + "_ticks"], c[p + "_tick_labels"] = ticks, labels
        c[p + "_scale"] = detect_scale(conv, get_scale(), ticks, labels)
    return c


def line_chart(ax):
    c = point_chart(ax, "line")
    for line in ax.get_lines():
        if is_grid_line(line):
            continue
        label = line.get_label()
        if label.startswith("_child"):
            label = "Line %d" % int(label[6:])
        c["elements"].append({"label": label, "points": [[point(x), point(y)]
                                                         for x, y in zip(line.get_xdata(), line.get_ydata())]})
    return c


def scatter_chart(ax):
    c = point_chart(ax, "scatter")
    for coll in ax.collections:
        c["elements"].append({"label": coll.get_label(),
                              "points": [[point(x), point(y)] for x, y in coll.get_offsets()]})
    return c


def bar_chart(ax):
    c = chart_2d(ax, "bar")
    for container in ax.containers:
        group = container.get_label()
        if group.startswith("_container"):
            group = "Group %d" % int(group[10:])
        heights = [rect.get_height() for rect in container]
        if all(h == heights[0] for h in heights):  # horizontal bars (barh)
            change_orientation(c)
            labels = [t.get_text() for t in ax.get_yticklabels()]
            values = [rect.get_width() for rect in container]
        else:
            labels = [t.get_text() for t in ax.get_xticklabels()]
            values = heights
        for label, value in zip(labels, values):
            c["elements"].append({"label": label, "group": group, "value": float(value)})
    return c


def pie_chart(ax):
    c = chart_base(ax, "pie")
    for wedge in ax.patches:
        angle = abs(dynamic_round(Decimal(float(wedge.theta2)) - Decimal(float(wedge.theta1))))
        c["elements"].append({"label": wedge.get_label(), "angle": float(angle), "radius": float(wedge.r)})
    return c


def box_chart(ax):
    c = chart_2d(ax, "box_and_whisker")
    labels = [t.get_text() for t in ax.get_xticklabels()]
    boxes = []
    for label, box in zip(labels, ax.patches):
        v = box.get_path().vertices
        xs = [dynamic_round(x) for x in v[:, 0]]
        ys = [dynamic_round(y) for y in v[:, 1]]
        x, y = min(xs), min(ys)
        boxes.append({"x": x, "y": y, "label": label, "width": max(xs) - x, "height": max(ys) - y, "outliers": []})
    vertical = all(b["height"] == boxes[0]["height"] for b in boxes)
    if vertical:
        change_orientation(c)
        for b in boxes:
            b["x"], b["y"] = b["y"], b["x"]
            b["width"], b["height"] = b["height"], b["width"]
    for line in ax.lines:
        xd = [dynamic_round(x) for x in line.get_xdata()]
        yd = [dynamic_round(y) for y in line.get_ydata()]
        if vertical:
            xd, yd = yd, xd
        if len(xd) == 1:
            for box in boxes:
                if box["x"] <= xd[0] <= box["x"] + box["width"]:
                    break
            else:
                continue
            box["outliers"].append(yd[0])
        if len(yd) != 2:
            continue
        for box in boxes:
            if box["x"] <= xd[0] <= xd[1] <= box["x"] + box["width"]:
                break
        else:
            continue
        if yd[0] == yd[1] and box["y"] <= yd[0] <= box["y"] + box["height"]:
            box["median"] = yd[0]
            continue
        lo, hi = min(yd), max(yd)
        if hi == box["y"]:
            box["whisker_lower"] = lo
        elif lo == box["y"] + box["height"]:
            box["whisker_upper"] = hi
    c["elements"] = [{"label": b["label"], "min": float(b["whisker_lower"]), "first_quartile": float(b["y"]),
                      "median": float(b["median"]), "third_quartile": float(b["y"] + b["height"]),
                      "max": float(b["whisker_upper"]), "outliers": [float(o) for o in b["outliers"]]}
                     for b in boxes]
    return c


def chart_type(ax):
    from matplotlib.collections import PathCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import PathPatch, Rectangle, Wedge
    from matplotlib.text import Text
    objects = [o for o in ax._children if not isinstance(o, Text)]
    if all(isinstance(o, Line2D) for o in objects):
        return "line"
    if all(isinstance(o, (PathPatch, Line2D)) for o in objects):
        return "box_and_whisker"
    objects = [o for o in objects if not (isinstance(o, Line2D) and is_grid_line(o))]
    if all(isinstance(o, PathCollection) for o in objects):
        return "scatter"
    if all(isinstance(o, Wedge) for o in objects):
        return "pie"
    if all(isinstance(o, Rectangle) for o in objects):
        return "bar"
    return "unknown"


def chart_of_ax(ax):
    kind = chart_type(ax)
    make = {"line": line_chart, "scatter": scatter_chart, "bar": bar_chart, "pie": pie_chart,
            "box_and_whisker": box_chart}.get(kind)
    return make(ax) if make else chart_base(ax, kind)


def chart_figure_to_dict(figure):
    axes = figure.get_axes()
    if not axes or not any(ax.has_data() for ax in axes):
        return {}
    if len(axes) > 1:
        sup = getattr(figure, "_suptitle", None)
        return {"type": "superchart", "title": sup.get_text() if sup is not None else "",
                "elements": [chart_of_ax(ax) for ax in axes]}
    return chart_of_ax(axes[0])
