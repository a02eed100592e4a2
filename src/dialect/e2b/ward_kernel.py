# ward_kernel.py — the code interpreter's kernel (SPEC §17): one Python
# process per code context, inside the sandbox, under its limits.  ward's own
# rather than Jupyter's ipykernel: it needs nothing but python3 (ipykernel,
# jupyter_client and zmq are not on a plain Debian host or most images), it
# starts in tens of milliseconds, and its protocol is one JSON line each way.
#
# stdin: one request a line, {"code": "...", "env": {...}}.  stdout (the
# protocol): the events of E2B's /execute NDJSON, one a line, ASCII only,
# then {"type": "__done__"}.  What the code prints goes through sys.stdout /
# sys.stderr replacements that emit events; fd 1 of the code's own children
# is fd 2 (never the protocol).  SIGINT interrupts the running code only.
import ast, base64, datetime, importlib.machinery, io, json, os, signal, sys, traceback

proto = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
stdin = sys.stdin
count = 0
ns = {"__name__": "__main__", "__builtins__": __builtins__}


def emit(ev):
    proto.write(json.dumps(ev) + "\n")
    proto.flush()


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


class Stream(io.TextIOBase):
    # whole lines as they come (print writes its end separately); the rest
    # at a flush, and at the execution's end
    def __init__(self, name):
        self.name, self.buf = name, ""

    def writable(self):
        return True

    def write(self, s):
        self.buf += s
        if "\n" in self.buf:
            head, _, self.buf = self.buf.rpartition("\n")
            emit({"type": self.name, "text": head + "\n", "timestamp": now()})
        return len(s)

    def flush(self):
        if self.buf:
            emit({"type": self.name, "text": self.buf, "timestamp": now()})
            self.buf = ""


def is_figure(value):
    mf = sys.modules.get("matplotlib.figure")
    return mf is not None and isinstance(value, mf.Figure)


def png_of(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def result_of(value):
    r = {"type": "result", "is_main_result": True, "text": repr(value)}
    if is_figure(value):  # as Jupyter's inline backend shows it
        r["png"] = png_of(value)
    for attr, key in (("_repr_html_", "html"), ("_repr_markdown_", "markdown"), ("_repr_svg_", "svg"),
                      ("_repr_latex_", "latex"), ("_repr_json_", "json")):
        f = getattr(value, attr, None)
        if callable(f):
            try:
                v = f()
                if v is not None:
                    r[key] = v
            except Exception:
                pass
    return r


def figures(shown=None):
    # every open figure (but shown, the main result's own) as a png result,
    # then all closed: what Jupyter's inline backend does at plt.show() and
    # at a cell's end
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    try:
        for num in plt.get_fignums():
            fig = plt.figure(num)
            if fig is not shown:
                emit({"type": "result", "is_main_result": False, "text": repr(fig), "png": png_of(fig)})
    finally:
        plt.close("all")


class PyplotHook:
    # sys.meta_path: matplotlib.pyplot's show() replaced as it is imported,
    # whatever the backend (matplotlib.use("Agg") too), by one that shows
    # the open figures as png results there and then, in order with the
    # cell's output, and closes them (the next plot a figure of its own)
    def find_spec(self, name, path=None, target=None):
        if name != "matplotlib.pyplot":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)

            def show(*args, **kwargs):
                for f in (sys.stdout, sys.stderr):
                    f.flush()
                figures()

            show.__doc__ = module.show.__doc__
            module.show = show

        spec.loader.exec_module = exec_module
        return spec


def run(code):
    tree = ast.parse(code, "<cell>", "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    value = None
    try:
        exec(compile(tree, "<cell>", "exec"), ns)
        value = eval(compile(last, "<cell>", "eval"), ns) if last is not None else None
        if value is not None:
            emit(result_of(value))
    finally:  # a failed cell's figures too: none is left for the next
        figures(value)


def main():
    global count
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.meta_path.insert(0, PyplotHook())
    sys.stdout, sys.stderr = Stream("stdout"), Stream("stderr")
    for line in stdin:
        try:
            req = json.loads(line)
        except ValueError:
            continue
        saved = dict(os.environ)
        try:
            os.environ.update({str(k): str(v) for k, v in (req.get("env") or {}).items()})
            count += 1
            emit({"type": "number_of_executions", "execution_count": count})
            run(req.get("code", ""))
        except BaseException as e:  # KeyboardInterrupt too: the kernel lives on
            if isinstance(e, SystemExit):
                pass
            tb = traceback.format_exception(type(e), e, e.__traceback__)
            emit({"type": "error", "name": type(e).__name__, "value": str(e), "traceback": "".join(tb)})
        finally:
            os.environ.clear()
            os.environ.update(saved)
            for f in (sys.stdout, sys.stderr):
                try:
                    f.flush()
                except BaseException:
                    pass
            emit({"type": "__done__"})


main()
