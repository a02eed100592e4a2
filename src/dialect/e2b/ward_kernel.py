# ward_kernel.py — the code interpreter's Python kernel (SPEC §17-18): one
# process per code context, inside the sandbox, under its limits.  Where the
# template has IPython it runs IPython's own shell (the machinery ipykernel
# wraps: `!cmd`, `%magics`, top-level await, display(), every rich repr,
# matplotlib's inline backend) with ward's protocol instead of Jupyter's ZMQ
# sockets; without IPython it runs a plain exec/eval loop that needs nothing
# but python3.  Either starts in well under a second.
#
# argv[1]: ward_charts.py's source (E2B's chart extraction, run only when a
# figure is shown).  stdin: one request a line, {"code": "...", "env": {...}}.
# stdout (the protocol): first {"type": "__ready__", "kernel": ...}, then
# for each request the events of E2B's /execute NDJSON, one a line, ASCII
# only, then {"type": "__done__"}.  What the code prints goes through
# sys.stdout / sys.stderr replacements that emit events; fd 1 of the code's
# own children is fd 2 (never the protocol; ward forwards it as stderr).
# SIGINT interrupts the running code only.
import base64, datetime, io, json, math, os, signal, sys, traceback

proto = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
stdin = sys.stdin
CHUNK = 64 * 1024     # an output event carries at most this many characters
LINE_CAP = 1 << 20    # of one line (no newline yet) this much is kept, the rest dropped and said
HOME = os.environ.get("HOME", "/home/user")
MIME = {"text/plain": "text", "text/html": "html", "text/markdown": "markdown", "image/svg+xml": "svg",
        "image/png": "png", "image/jpeg": "jpeg", "application/pdf": "pdf", "text/latex": "latex",
        "application/json": "json", "application/javascript": "javascript", "e2b/data": "data",
        "e2b/chart": "chart"}


def finite(v):
    # JSON has no NaN or Infinity (the SDK's JSON.parse refuses them): null
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [finite(x) for x in v]
    return v


def emit(ev):
    try:
        line = json.dumps(ev, allow_nan=False)
    except ValueError:
        line = json.dumps(finite(ev))
    proto.write(line + "\n")
    proto.flush()


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


class Stream(io.TextIOBase):
    # whole lines as they come (print writes its end separately), a long
    # line in CHUNKs; past LINE_CAP one line's rest is dropped and said
    def __init__(self, name):
        self.name, self.buf, self.line, self.dropped = name, "", 0, 0

    def writable(self):
        return True

    def out(self, text):
        if text:
            emit({"type": self.name, "text": text, "timestamp": now()})

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not " + type(s).__name__)
        n = len(s)
        while s:
            i = s.find("\n")
            part, s = (s, "") if i < 0 else (s[: i + 1], s[i + 1:])
            body = part[:-1] if part.endswith("\n") else part
            room = max(0, LINE_CAP - self.line)
            kept, self.dropped = body[:room], self.dropped + len(body) - len(body[:room])
            self.line += len(kept)
            self.buf += kept
            if part.endswith("\n"):
                self.buf += "\n"
                self.flush()
                self.line = 0
            elif len(self.buf) >= CHUNK:
                self.out(self.buf)
                self.buf = ""
        return n

    def flush(self):
        self.out(self.buf)
        self.buf = ""
        if self.dropped:
            emit({"type": "stderr", "timestamp": now(),
                  "text": "[ward: %d characters of one output line past its first %d were dropped]\n"
                          % (self.dropped, LINE_CAP)})
            self.dropped = 0


def flush_streams():
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except BaseException:
            pass


def logical_cwd():
    # /home/user is the sandbox's /work under another name (a link): the
    # code sees the name it was given, as a shell's pwd does
    real, home = os.path.realpath(HOME), HOME
    getcwd = os.getcwd

    def cwd():
        p = getcwd()
        if real != home and (p == real or p.startswith(real + "/")):
            return home + p[len(real):]
        return p

    os.getcwd = cwd
    os.getcwdb = lambda: os.fsencode(cwd())


def text_of(t):
    # E2B's server strips one pair of surrounding quotes: 'abc' -> abc
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    return t


def result_event(data, main):
    r = {"type": "result"}
    extra = {}
    for mime, v in data.items():
        if isinstance(v, (bytes, bytearray)):
            v = base64.b64encode(v).decode("ascii")
        key = MIME.get(mime)
        if key is None:
            extra[mime] = v
        else:
            r[key] = text_of(v) if key == "text" and isinstance(v, str) else v
    r["extra"] = extra
    r["is_main_result"] = main
    return r


charts = {}


def chart_of(fig):
    # E2B's e2b/chart for a matplotlib figure (ward_charts.py), {} when it fails
    try:
        if "chart_figure_to_dict" not in charts:
            exec(compile(sys.argv[1] if len(sys.argv) > 1 else "", "ward_charts.py", "exec"), charts)
        return charts["chart_figure_to_dict"](fig)
    except Exception:
        return {}


def is_figure(value):
    mf = sys.modules.get("matplotlib.figure")
    return mf is not None and isinstance(value, mf.Figure)


def figure_data(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return {"text/plain": repr(fig), "image/png": base64.b64encode(buf.getvalue()).decode("ascii"),
            "e2b/chart": chart_of(fig)}


# ---- the plain kernel: python3 alone ----

class Plain:
    kind = "python"

    def __init__(self):
        import importlib.machinery
        self.ns = {"__name__": "__main__", "__builtins__": __builtins__}
        self.count = 0
        kernel = self

        class PyplotHook:
            # matplotlib.pyplot's show() replaced as it is imported,
            # whatever the backend, by one that shows the open figures
            # there and then, in order with the cell's output
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
                        flush_streams()
                        kernel.figures()

                    show.__doc__ = module.show.__doc__
                    module.show = show

                spec.loader.exec_module = exec_module
                return spec

        sys.meta_path.insert(0, PyplotHook())

    def figures(self, shown=None):
        # every open figure (but shown, the main result's own), then all
        # closed: what Jupyter's inline backend does at a cell's end
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None:
            return
        try:
            for num in plt.get_fignums():
                fig = plt.figure(num)
                if fig is not shown:
                    emit(result_event(figure_data(fig), False))
        finally:
            plt.close("all")

    def result(self, value):
        data = figure_data(value) if is_figure(value) else {"text/plain": repr(value)}
        for attr, mime in (("_repr_html_", "text/html"), ("_repr_markdown_", "text/markdown"),
                           ("_repr_svg_", "image/svg+xml"), ("_repr_latex_", "text/latex"),
                           ("_repr_json_", "application/json")):
            f = getattr(value, attr, None)
            if callable(f):
                try:
                    v = f()
                    if v is not None:
                        data[mime] = v
                except Exception:
                    pass
        return result_event(data, True)

    def run(self, code):
        import ast
        self.count += 1
        emit({"type": "number_of_executions", "execution_count": self.count})
        value = None
        try:
            tree = ast.parse(code, "<cell>", "exec")
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            exec(compile(tree, "<cell>", "exec"), self.ns)
            value = eval(compile(last, "<cell>", "eval"), self.ns) if last is not None else None
            if value is not None:
                flush_streams()
                emit(self.result(value))
        except BaseException as e:  # KeyboardInterrupt too: the kernel lives on
            flush_streams()
            tb = traceback.format_exception(type(e), e, e.__traceback__)
            emit({"type": "error", "name": type(e).__name__, "value": str(e), "traceback": "".join(tb)})
        finally:  # a failed cell's figures too: none is left for the next
            self.figures(value)


# ---- IPython: the shell ipykernel runs, speaking ward's protocol ----

def ipython_kernel():
    import importlib.util
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.formatters import BaseFormatter, JSONFormatter
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets import ObjectName, Type, Unicode

    if importlib.util.find_spec("matplotlib_inline") is not None:
        # what ipykernel does: pyplot, once imported, shows through display()
        os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    state = {"errored": False}

    class Hook(DisplayHook):
        # the cell's value: execute_result, E2B's main result
        def start_displayhook(self):
            flush_streams()

        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            emit(result_event(dict(format_dict), True))

        def finish_displayhook(self):
            flush_streams()

    class Pub(DisplayPublisher):
        # display(): display_data, a result that is not the main one
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            flush_streams()
            emit(result_event(dict(data), False))

        def clear_output(self, wait=False):
            pass

    class Shell(InteractiveShell):
        displayhook_class = Type(Hook)
        display_pub_class = Type(Pub)

        def _showtraceback(self, etype, evalue, stb):
            # the first error of an execution, as E2B's server keeps it
            flush_streams()
            if not state["errored"]:
                state["errored"] = True
                emit({"type": "error", "name": etype.__name__, "value": str(evalue), "traceback": "".join(stb)})

    class DataFormatter(BaseFormatter):
        # E2B's e2b/data: a pandas DataFrame's columns
        format_type = Unicode("e2b/data")
        print_method = ObjectName("_repr_e2b_data_")
        _return_type = (dict, str)

        def __call__(self, obj):
            pandas = sys.modules.get("pandas")
            if pandas is None or not isinstance(obj, pandas.DataFrame):
                return super().__call__(obj)
            result = obj.to_dict(orient="list")
            for key, value in result.items():
                result[key] = [v.isoformat() if isinstance(v, pandas.Timestamp) else v for v in value]
            return result

    class ChartFormatter(BaseFormatter):
        # E2B's e2b/chart: what a shown matplotlib figure draws
        format_type = Unicode("e2b/chart")
        print_method = ObjectName("_repr_e2b_chart_")
        _return_type = (dict, str)

        def __call__(self, obj):
            if not is_figure(obj):
                return super().__call__(obj)
            return chart_of(obj)

    class JsonFormatter(JSONFormatter):
        # E2B's: a dict or list result is JSON too (numpy values as numbers)
        def __call__(self, obj):
            if isinstance(obj, (list, dict)):
                def plain(v):
                    if hasattr(v, "tolist"):
                        return v.tolist()
                    raise TypeError(type(v).__name__)
                try:
                    return json.loads(json.dumps(obj, default=plain)), {"expanded": True}
                except (TypeError, ValueError, RecursionError):
                    pass
            return super().__call__(obj)

    shell = Shell.instance(colors="NoColor")
    shell.display_formatter.formatters["text/plain"].max_seq_length = 0
    shell.display_formatter.formatters["e2b/data"] = DataFormatter(parent=shell.display_formatter)
    shell.display_formatter.formatters["e2b/chart"] = ChartFormatter(parent=shell.display_formatter)
    shell.display_formatter.formatters["application/json"] = JsonFormatter(parent=shell.display_formatter)
    import IPython

    class Kernel:
        kind = "ipython " + IPython.__version__

        def run(self, code):
            state["errored"] = False
            emit({"type": "number_of_executions", "execution_count": shell.execution_count})
            try:
                shell.run_cell(code, store_history=True)
            except BaseException as e:  # an interrupt between IPython's own handlers
                flush_streams()
                if not state["errored"]:
                    tb = traceback.format_exception(type(e), e, e.__traceback__)
                    emit({"type": "error", "name": type(e).__name__, "value": str(e), "traceback": "".join(tb)})

    return Kernel()


def main():
    signal.signal(signal.SIGINT, signal.default_int_handler)
    logical_cwd()
    sys.stdout, sys.stderr = Stream("stdout"), Stream("stderr")
    try:
        kernel = ipython_kernel()
    except ImportError:
        kernel = Plain()
    emit({"type": "__ready__", "kernel": kernel.kind})
    while True:
        try:
            line = stdin.readline()
            if not line:
                break
            req = json.loads(line)
        except KeyboardInterrupt:  # an interrupt meant for a cell that had ended
            continue
        except ValueError:
            continue
        saved = dict(os.environ)
        try:
            os.environ.update({str(k): str(v) for k, v in (req.get("env") or {}).items()})
            kernel.run(req.get("code", ""))
        except BaseException as e:  # an interrupt outside the code: the kernel lives on
            emit({"type": "error", "name": type(e).__name__, "value": str(e), "traceback": ""})
        finally:
            os.environ.clear()
            os.environ.update(saved)
            flush_streams()
            emit({"type": "__done__"})


main()
