"""Keep instructor code honest while it handles objects that student code made.

Runs inside the sandbox. Instructor cells (setup, read-only and test cells) are compiled with
``instrument``: every comparison, truth test, arithmetic operation, ``isinstance``, call, attribute
and global-name lookup goes through a guard function. The guards are reached through a code constant
(not a global name), so student code cannot rebind them. They refuse objects whose behaviour the
student controls where it matters (always-equal objects, subclasses of expected value types, tensor
subclasses, patched methods of library classes) and resolve module attributes and instructor helpers
through references captured before any student code ran.

This is defence in depth, not a security boundary: the security boundary is the sandbox process.
"""

from __future__ import annotations

import ast
import builtins
import operator
import sys
import types

PLACEHOLDER = "\x00safegrade-guard\x00"
STUDENT_PREFIX = "<safegrade:solution:"
INSTRUCTOR_PREFIX = "<safegrade:instructor:"

SUSPECT = frozenset(
    """__eq__ __ne__ __lt__ __le__ __gt__ __ge__ __bool__ __len__ __hash__ __contains__ __iter__
    __next__ __getitem__ __getattr__ __getattribute__ __class__ __instancecheck__ __subclasscheck__
    __torch_function__ __torch_dispatch__ __array__ __array_ufunc__ __array_function__ __float__
    __int__ __index__ __complex__ __abs__ __neg__ __pos__ __invert__ __round__ __trunc__ __floor__
    __ceil__ __add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__
    __floordiv__ __rfloordiv__ __mod__ __rmod__ __pow__ __rpow__ __matmul__ __rmatmul__ __and__
    __rand__ __or__ __ror__ __xor__ __rxor__ __lshift__ __rlshift__ __rshift__ __rrshift__
    __divmod__ __rdivmod__""".split()
)
# Hooks the runner resets itself; changing them is not tampering with a test.
EXEMPT_MODULE_ATTRS = frozenset(
    {
        ("sys", "excepthook"),
        ("sys", "displayhook"),
        ("sys", "breakpointhook"),
        ("sys", "unraisablehook"),
        ("warnings", "showwarning"),
        ("warnings", "formatwarning"),
    }
)
# Whose hooks `warnings.catch_warnings` and the runner's warnings policy swap in and out.
EXEMPT_MODULES = frozenset({"warnings"})
NATIVE_CALLS = frozenset(
    {"super", "locals", "globals", "vars", "dir", "eval", "exec", "breakpoint"}
)
MAX_ITEMS = 20000
MAX_DEPTH = 12

CMP, TRUTH, VAL, BINOP, UNARY, ISINST, ISSUB, CALL, ATTR, NAME, ITEM = range(11)

_CMP_OPS = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}
_BIN_OPS = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.MatMult: "matmul",
    ast.Div: "truediv",
    ast.FloorDiv: "floordiv",
    ast.Mod: "mod",
    ast.Pow: "pow",
    ast.LShift: "lshift",
    ast.RShift: "rshift",
    ast.BitOr: "or_",
    ast.BitXor: "xor",
    ast.BitAnd: "and_",
}
_UNARY_OPS = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert"}


class Rejected(Exception):
    """A test met an object whose behaviour was under the student's control."""


# ----------------------------------------------------------------------------- instrumentation


def _guard_fn(index: int) -> ast.expr:
    getitem = ast.Attribute(ast.Constant(PLACEHOLDER), "__getitem__", ast.Load())
    return ast.Call(getitem, [ast.Constant(index)], [])


def _call_guard(index: int, args: list[ast.expr], keywords=None) -> ast.Call:
    return ast.Call(_guard_fn(index), args, keywords or [])


def _target_names(node: ast.AST, out: set[str]) -> None:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, (ast.MatchAs, ast.MatchStar)) and sub.name:
            out.add(sub.name)
        elif isinstance(sub, ast.MatchMapping) and sub.rest:
            out.add(sub.rest)


def scope_bindings(body: list[ast.AST]) -> tuple[set[str], set[str]]:
    """Names bound directly in a scope (not in nested scopes), and names it declares global."""
    bound: set[str] = set()
    declared_global: set[str] = set()
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            stack.extend(node.decorator_list)
            if isinstance(node, ast.ClassDef):
                stack.extend(node.bases + [k.value for k in node.keywords])
            else:
                stack.extend(node.args.defaults + [d for d in node.args.kw_defaults if d])
            continue
        if isinstance(node, ast.Lambda):
            stack.extend(node.args.defaults + [d for d in node.args.kw_defaults if d])
            continue
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            stack.append(node.generators[0].iter)
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    bound.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        elif isinstance(node, ast.Global):
            declared_global.update(node.names)
        stack.extend(ast.iter_child_nodes(node))
    return bound - declared_global, declared_global


def _params(args: ast.arguments) -> set[str]:
    every = args.posonlyargs + args.args + args.kwonlyargs
    names = {a.arg for a in every}
    names.update(a.arg for a in (args.vararg, args.kwarg) if a)
    return names


class Instrumenter(ast.NodeTransformer):
    """Rewrite instructor code so that its decisions go through the guard functions."""

    def __init__(self, live_names: set[str]):
        # live_names: names the cell itself binds at module level (looked up live, not pinned)
        self.live_names = live_names
        self.scopes: list[tuple[str, set[str]]] = [("module", set())]

    # -- scopes
    def _with_scope(self, kind: str, local: set[str], node: ast.AST, fields: list[str]) -> ast.AST:
        self.scopes.append((kind, local))
        try:
            self._visit_fields(node, fields)
        finally:
            self.scopes.pop()
        return node

    def _visit_list(self, nodes: list) -> list:
        out = []
        for item in nodes:
            new = self.visit(item)
            if new is None:
                continue
            out.extend(new if isinstance(new, list) else [new])
        return out

    def _visit_fields(self, node, fields):
        """Visit the named fields of `node` in the current scope, replacing them in place."""
        for name in fields:
            value = getattr(node, name)
            if isinstance(value, list):
                setattr(node, name, self._visit_list(value))
            elif value is not None:
                setattr(node, name, self.visit(value))

    def visit_FunctionDef(self, node):
        self._visit_fields(node, ["decorator_list", "returns"])
        node.args.defaults = self._visit_list(node.args.defaults)
        node.args.kw_defaults = [self.visit(d) if d else d for d in node.args.kw_defaults]
        bound, _ = scope_bindings(node.body)
        return self._with_scope("function", bound | _params(node.args), node, ["body"])

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        node.args.defaults = self._visit_list(node.args.defaults)
        node.args.kw_defaults = [self.visit(d) if d else d for d in node.args.kw_defaults]
        return self._with_scope("function", _params(node.args), node, ["body"])

    def visit_ClassDef(self, node):
        self._visit_fields(node, ["decorator_list", "bases", "keywords"])
        return self._with_scope("class", set(), node, ["body"])

    def _visit_comp(self, node, fields):
        first = node.generators[0]
        first.iter = _call_guard(VAL, [self.visit(first.iter)])
        local: set[str] = set()
        for gen in node.generators:
            _target_names(gen.target, local)
        self.scopes.append(("function", local))
        try:
            for i, gen in enumerate(node.generators):
                if i:
                    gen.iter = _call_guard(VAL, [self.visit(gen.iter)])
                gen.ifs = [_call_guard(TRUTH, [self.visit(cond)]) for cond in gen.ifs]
            for name in fields:
                setattr(node, name, self.visit(getattr(node, name)))
        finally:
            self.scopes.pop()
        return node

    def visit_ListComp(self, node):
        return self._visit_comp(node, ["elt"])

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node):
        return self._visit_comp(node, ["key", "value"])

    def _is_global(self, name: str) -> bool | None:
        """True: global lookup; False: local/free; None: class body (leave alone)."""
        kind, local = self.scopes[-1]
        if kind == "class":
            return None
        if kind == "module":
            return True
        for kind, local in reversed(self.scopes):
            if kind == "function" and name in local:
                return False
        return True

    # -- rewrites
    def visit_Name(self, node):
        if not isinstance(node.ctx, ast.Load) or node.id.startswith("__sg"):
            return node
        if self._is_global(node.id):
            live = self.scopes[-1][0] == "module" and node.id in self.live_names
            return ast.copy_location(
                _call_guard(NAME, [ast.Constant(node.id), ast.Constant(live)]), node
            )
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load):
            return node
        return ast.copy_location(_call_guard(ATTR, [node.value, ast.Constant(node.attr)]), node)

    def visit_Compare(self, node):
        self.generic_visit(node)
        ops = ast.Tuple([ast.Constant(_CMP_OPS[type(op)]) for op in node.ops], ast.Load())
        return ast.copy_location(_call_guard(CMP, [ops, node.left, *node.comparators]), node)

    def visit_BinOp(self, node):
        self.generic_visit(node)
        name = ast.Constant(_BIN_OPS[type(node.op)])
        return ast.copy_location(_call_guard(BINOP, [name, node.left, node.right]), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            node.operand = _call_guard(TRUTH, [node.operand])
            return node
        name = ast.Constant(_UNARY_OPS[type(node.op)])
        return ast.copy_location(_call_guard(UNARY, [name, node.operand]), node)

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        node.values = [_call_guard(VAL, [v]) for v in node.values]
        return node

    def _guard_test(self, node):
        self.generic_visit(node)
        node.test = _call_guard(TRUTH, [node.test])
        return node

    visit_If = visit_While = visit_Assert = visit_IfExp = _guard_test

    def visit_For(self, node):
        self.generic_visit(node)
        node.iter = _call_guard(VAL, [node.iter])
        return node

    visit_AsyncFor = visit_For

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load):
            return node
        key = node.slice
        if isinstance(key, ast.Slice):
            make_slice = _call_guard(NAME, [ast.Constant("slice"), ast.Constant(False)])
            parts = [k or ast.Constant(None) for k in (key.lower, key.upper, key.step)]
            key = ast.Call(make_slice, parts, [])
        return ast.copy_location(_call_guard(ITEM, [node.value, key]), node)

    def visit_Call(self, node):
        func = node.func
        if isinstance(func, ast.Name) and func.id in NATIVE_CALLS:
            node.args = self._visit_list(node.args)
            node.keywords = self._visit_list(node.keywords)
            return node
        if (
            isinstance(func, ast.Name)
            and func.id in ("isinstance", "issubclass")
            and not (node.keywords or any(isinstance(a, ast.Starred) for a in node.args))
        ):
            self.generic_visit(node)
            which = ISINST if func.id == "isinstance" else ISSUB
            return ast.copy_location(_call_guard(which, node.args), node)
        self.generic_visit(node)
        return ast.copy_location(_call_guard(CALL, [node.func, *node.args], node.keywords), node)


def module_bindings(tree: ast.Module) -> set[str]:
    bound, declared = scope_bindings(tree.body)
    return bound | declared


def loaded_names(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _has_star_import(tree: ast.AST) -> bool:
    return any(
        isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)
        for n in ast.walk(tree)
    )


CELL_FUNCTION = "__sg_cell__"


def instrument(source: str, filename: str, as_function: bool) -> types.CodeType:
    """Compile instructor code with guards. A test cell compiles to a function body whose
    assignments are fast locals (out of reach of student code that rewrites globals); the code
    defines ``__sg_cell__`` returning its locals."""
    tree = ast.parse(source, filename)
    as_function = as_function and not _has_star_import(tree)
    if as_function:
        body = tree.body or [ast.Pass()]
        ret = ast.Return(ast.Call(ast.Name("locals", ast.Load()), [], []))
        args = ast.arguments([], [], None, [], [], None, [])
        func = ast.FunctionDef(CELL_FUNCTION, args, body + [ret], [], None, None)
        tree = ast.Module([func], [])
        ast.fix_missing_locations(tree)
        live: set[str] = set()
    else:
        live = module_bindings(tree)
    tree = Instrumenter(live).visit(tree)
    ast.fix_missing_locations(tree)
    return compile(tree, filename, "exec", dont_inherit=True)


def bind_guard(code: types.CodeType, guard: tuple) -> types.CodeType:
    """Replace the placeholder constant with the guard tuple, in nested code objects too."""
    consts = []
    for const in code.co_consts:
        if isinstance(const, str) and const == PLACEHOLDER:
            consts.append(guard)
        elif isinstance(const, types.CodeType):
            consts.append(bind_guard(const, guard))
        else:
            consts.append(const)
    return code.replace(co_consts=tuple(consts))


# ----------------------------------------------------------------------------- snapshot


def _all_classes() -> list[type]:
    seen: dict[int, type] = {}
    stack: list[type] = [object]
    while stack:
        cls = stack.pop()
        if id(cls) in seen:
            continue
        seen[id(cls)] = cls
        try:
            stack.extend(type.__subclasses__(cls))
        except TypeError:
            try:
                stack.extend(cls.__subclasses__())
            except Exception:
                pass
    return list(seen.values())


_IMMUTABLE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE


def _is_behaviour(value) -> bool:
    return callable(value) or hasattr(type(value), "__get__")


def _is_watchable(value) -> bool:
    return issubclass(  # type(), not isinstance(): some module attributes warn on __class__
        type(value),
        (
            types.FunctionType,
            types.BuiltinFunctionType,
            types.MethodType,
            type,
            types.ModuleType,
            classmethod,
            staticmethod,
            property,
        ),
    )


class Snapshot:
    """Library state captured before any student code runs (taken once per worker)."""

    def __init__(self):
        self.classes = frozenset(_all_classes())
        # Behaviour only (functions, descriptors, classes): libraries legitimately rewrite
        # strings such as __module__ when a package is imported later.
        self.heap = {}
        for cls in self.classes:
            if not cls.__flags__ & _IMMUTABLE:
                try:
                    self.heap[cls] = {
                        k: v for k, v in cls.__dict__.items() if k in SUSPECT or _is_behaviour(v)
                    }
                except Exception:
                    pass
        self.modules = {}
        self.module_attrs = {}
        for name, mod in list(sys.modules.items()):
            if type(mod) is not types.ModuleType or name == "__main__":
                continue
            try:
                attrs = dict(mod.__dict__)
            except Exception:
                continue
            self.module_attrs[id(mod)] = (mod, attrs)
            watched = tuple(
                (k, v)
                for k, v in attrs.items()
                if _is_watchable(v)
                and (name, k) not in EXEMPT_MODULE_ATTRS
                and name not in EXEMPT_MODULES
            )
            self.modules[name] = (mod, watched)
        self.builtins = dict(builtins.__dict__)
        self.benign_codes = _fx_patch_codes()
        value_bases = [int, float, complex, str, bytes, bytearray]
        value_bases += [list, tuple, dict, set, frozenset]
        torch = sys.modules.get("torch")
        if torch is not None:
            value_bases.append(torch.Tensor)
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            value_bases += [numpy.ndarray, numpy.generic]
        self.value_bases = tuple(value_bases)

    def tampering(self, limit: int = 5) -> list[str]:
        """Library functions, classes and modules changed since the snapshot."""
        found: list[str] = []
        modules = sys.modules
        for name, (mod, watched) in self.modules.items():
            if modules.get(name, mod) is not mod:
                found.append(f"sys.modules[{name!r}] was replaced")
            current = mod.__dict__
            for key, value in watched:
                if current.get(key, _MISSING) is not value:
                    found.append(f"{name}.{key} was replaced")
                    break
            if len(found) >= limit:
                return found
        for cls, saved in self.heap.items():
            if any(base.__name__ == "pybind11_object" for base in cls.__mro__):
                continue  # C++ classes get patched by their Python wrappers on (lazy) import
            current = cls.__dict__
            if any(current.get(k, _MISSING) is not v for k, v in saved.items()) or any(
                k in SUSPECT and k not in saved for k in current
            ):
                changed = [
                    k
                    for k, v in saved.items()
                    if current.get(k, _MISSING) is not v
                    and not benign_patch(current.get(k), self.benign_codes)
                ]
                added = [k for k in current if k not in saved and k in SUSPECT]
                if changed or added:
                    what = (changed + added)[0]
                    found.append(f"{cls.__module__}.{cls.__qualname__}.{what} was changed")
                    if len(found) >= limit:
                        return found
        return found


_MISSING = object()


def _fx_patch_codes() -> dict[int, types.CodeType]:
    """Code objects of the wrappers torch.fx installs on classes while it traces (it patches
    torch.nn.Module.__call__ and __getattr__ and restores them afterwards)."""
    module = sys.modules.get("torch.fx._symbolic_trace")
    codes: dict[int, types.CodeType] = {}
    if module is None:
        return codes
    stack = []
    for value in vars(module).values():
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            stack.append(value.__code__)
        elif isinstance(value, type) and value.__module__ == module.__name__:
            stack += [v.__code__ for v in vars(value).values() if isinstance(v, types.FunctionType)]
    while stack:
        code = stack.pop()
        if id(code) not in codes:
            codes[id(code)] = code
            stack += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return codes


def benign_patch(value, codes: dict) -> bool:
    code = getattr(value, "__code__", None)
    return type(value) is types.FunctionType and codes.get(id(code)) is code


# ----------------------------------------------------------------------------- guards


class State:
    """Mutable per-process state the guards consult; created in the worker before forking."""

    def __init__(self, snapshot: Snapshot, namespace: dict):
        self.snapshot = snapshot
        self.ns = namespace
        self.pins: dict[str, object] = {}  # instructor helpers (functions, classes, modules)
        self.instructor_names: set[str] = set()
        self.extra_trusted: set[type] = set()


def make_guard(state: State) -> tuple:
    """Build the guard functions; everything they use is bound here, before student code runs."""
    snap = state.snapshot
    classes, heap, module_attrs = snap.classes, snap.heap, snap.module_attrs
    value_bases, builtins_snap, benign_codes = snap.value_bases, snap.builtins, snap.benign_codes
    instructor_prefix = INSTRUCTOR_PREFIX
    is_behaviour = _is_behaviour
    pins, ns, extra, instructor_names = (
        state.pins,
        state.ns,
        state.extra_trusted,
        state.instructor_names,
    )
    _type, _isinstance, _issubclass, _getattr, _len, _bool = (
        type,
        isinstance,
        issubclass,
        getattr,
        len,
        bool,
    )
    _id, _any, _tuple, _dict, _list, _set, _frozenset = id, any, tuple, dict, list, set, frozenset
    _function, _method, _builtin, _module = (
        types.FunctionType,
        types.MethodType,
        types.BuiltinFunctionType,
        types.ModuleType,
    )
    suspect, student_prefix, rejected, missing = SUSPECT, STUDENT_PREFIX, Rejected, _MISSING
    containers = (list, tuple, set, frozenset)
    binops = {name: _getattr(operator, name) for name in _BIN_OPS.values()}
    unaryops = {name: _getattr(operator, name) for name in _UNARY_OPS.values()}
    cmpops = {
        "==": operator.eq,
        "!=": operator.ne,
        "<": operator.lt,
        "<=": operator.le,
        ">": operator.gt,
        ">=": operator.ge,
        "is": operator.is_,
        "is not": operator.is_not,
        "in": lambda a, b: operator.contains(b, a),
        "not in": lambda a, b: not operator.contains(b, a),
    }

    def qualname(t) -> str:
        try:
            return f"{t.__module__}.{t.__qualname__}"
        except Exception:
            return "?"

    def trusted_type(t) -> bool:
        return t in classes or t in extra or benign_dynamic(t) or instructor_class(t)

    def instructor_class(t) -> bool:
        # A class defined in instructor code (a hidden test's model, say): all its methods are.
        try:
            functions = [v for v in t.__dict__.values() if _type(v) is _function]
            return (
                bool(functions)
                and all(f.__code__.co_filename.startswith(instructor_prefix) for f in functions)
                and all(trusted_type(b) for b in t.__bases__)
            )
        except Exception:
            return False

    def benign_dynamic(t) -> bool:
        # torch.fx.GraphModule makes one class per instance, holding only the generated forward.
        try:
            return (
                t.__name__ == "GraphModuleImpl"
                and _type(t) is type
                and not (suspect & t.__dict__.keys())
                and _len(t.__bases__) == 1
                and (t.__bases__[0] in classes or t.__bases__[0] in extra)
            )
        except Exception:
            return False

    def class_changed(cls, names=suspect):
        saved = heap.get(cls)
        if saved is None:
            return None
        current = cls.__dict__
        for name in names:
            value, before = current.get(name, missing), saved.get(name, missing)
            if value is before or benign_patch(value, benign_codes):
                continue
            if before is missing and (value is missing or not is_behaviour(value)):
                continue
            return f"{qualname(cls)}.{name} was changed by student code"
        return None

    def type_problem(t, cache):
        if t in cache:
            return cache[t]
        problem = None
        try:
            if trusted_type(t):
                for base in t.__mro__:
                    problem = class_changed(base)
                    if problem:
                        break
            else:
                if not trusted_type(_type(t)):
                    problem = f"{qualname(t)} has a custom metaclass"
                for base in t.__mro__:
                    if problem:
                        break
                    if trusted_type(base):
                        problem = class_changed(base)
                        continue
                    overridden = sorted(suspect & base.__dict__.keys())
                    if overridden:
                        problem = f"your class {qualname(base)} overrides {overridden[0]}"
                if not problem and _issubclass(t, value_bases):
                    namedtuple_like = _issubclass(t, tuple) and "_fields" in t.__dict__
                    if not namedtuple_like:
                        problem = f"{qualname(t)} is a subclass of a built-in or tensor type"
        except Exception as exc:  # a hostile class may make introspection fail
            problem = f"cannot inspect {qualname(t)} ({_type(exc).__name__})"
        cache[t] = problem
        return problem

    def is_student_callable(f) -> bool:
        try:
            t = _type(f)
            if t is _function:
                return f.__code__.co_filename.startswith(student_prefix)
            if t is _method:
                return is_student_callable(f.__func__) or not trusted_type(_type(f.__self__))
            if t is _builtin:
                owner = f.__self__
                return not (owner is None or _type(owner) is _module or trusted_type(_type(owner)))
            if _issubclass(t, type):
                return not trusted_type(f)
            return not trusted_type(t)
        except Exception:
            return True

    def check(value, what="value"):
        cache: dict = {}
        stack = [(value, 0)]
        seen = 0
        while stack:
            item, depth = stack.pop()
            seen += 1
            if seen > MAX_ITEMS:
                return
            t = _type(item)
            problem = type_problem(t, cache)
            if problem:
                raise rejected(f"the test met an object it cannot trust: {problem}")
            if depth >= MAX_DEPTH:
                continue
            if _issubclass(t, containers):
                stack.extend((x, depth + 1) for x in item)
            elif _issubclass(t, _dict):
                stack.extend((x, depth + 1) for x in item.keys())
                stack.extend((x, depth + 1) for x in item.values())
            elif not _issubclass(t, (type, _module, _function, _builtin)):
                try:
                    attrs = object.__getattribute__(item, "__dict__")
                except Exception:
                    continue
                if _type(attrs) is not _dict:
                    continue
                for key, val in _list(attrs.items()):
                    if key in suspect or (
                        _isinstance(key, str)
                        and _type(val) in (_function, _method)
                        and is_student_callable(val)
                        and _getattr(t, key, missing) is not missing
                    ):
                        raise rejected(
                            f"the test met an object it cannot trust: {qualname(t)}.{key} "
                            "was replaced on the instance by student code"
                        )

    def g_cmp(ops, left, *rights):
        result = True
        for op, right in zip(ops, rights, strict=True):
            if op not in ("is", "is not"):
                check(left)
                check(right)
            result = cmpops[op](left, right)
            if _len(ops) > 1 and not g_truth(result):
                return result
            left = right
        return result

    def g_truth(value):
        check(value)
        return _bool(value)

    def g_val(value):
        check(value)
        return value

    def g_binop(name, left, right):
        check(left)
        check(right)
        return binops[name](left, right)

    def g_unary(name, value):
        check(value)
        return unaryops[name](value)

    def value_class(cls) -> bool:
        if _isinstance(cls, tuple):
            return _any(value_class(c) for c in cls)
        return _isinstance(cls, type) and _issubclass(cls, value_bases)

    def g_isinstance(obj, cls):
        t = _type(obj)  # type() cannot be spoofed through __class__
        if trusted_type(t):
            return _issubclass(t, cls)
        if type_problem(t, {}) or value_class(cls):
            return False  # student subclasses of expected types earn nothing
        classes_ = cls if _isinstance(cls, tuple) else (cls,)
        return _any(c in t.__mro__ for c in classes_)

    def g_issubclass(sub, cls):
        if _isinstance(sub, type) and not trusted_type(sub):
            if type_problem(sub, {}) or value_class(cls):
                return False
            classes_ = cls if _isinstance(cls, tuple) else (cls,)
            return _any(c in sub.__mro__ for c in classes_)
        return _issubclass(sub, cls)

    def g_call(func, /, *args, **kwargs):
        if not is_student_callable(func):
            for arg in args:
                check(arg)
            for arg in kwargs.values():
                check(arg)
        return func(*args, **kwargs)

    def g_attr(obj, name):
        t = _type(obj)
        if t is _module:
            saved = module_attrs.get(_id(obj))
            if saved is not None and saved[0] is obj:
                value = saved[1].get(name, missing)
                if value is not missing:
                    return value
            return _getattr(obj, name)
        owner = obj if _issubclass(t, type) else None
        if trusted_type(t) or (owner is not None and trusted_type(owner)):
            for cls in (owner or t).__mro__:
                if cls in heap:
                    problem = class_changed(cls, (name,))
                    if problem:
                        raise rejected(f"the test cannot trust {problem}")
        value = _getattr(obj, name)
        if owner is None and trusted_type(t):
            vt = _type(value)
            if not trusted_type(vt) and not _issubclass(vt, (type, _function, _method)):
                raise rejected(
                    f"the test cannot trust {qualname(t)}.{name}: it holds an instance of "
                    f"{qualname(vt)} made by student code"
                )
            if vt in (_function, _method) and is_student_callable(value):
                try:
                    on_instance = name in object.__getattribute__(obj, "__dict__")
                except Exception:
                    on_instance = False
                if on_instance and _getattr(t, name, missing) is not missing:
                    raise rejected(
                        f"the test cannot trust {qualname(t)}.{name}: student code replaced it "
                        "on the instance"
                    )
        return value

    def g_item(obj, key):
        problem = type_problem(_type(obj), {})
        if problem:
            raise rejected(f"the test met an object it cannot trust: {problem}")
        return obj[key]

    def g_name(name, live):
        if not live:
            value = pins.get(name, missing)
            if value is not missing:
                return value
            if name in builtins_snap and name not in instructor_names:
                return builtins_snap[name]
        value = ns.get(name, missing)
        if value is not missing:
            return value
        value = builtins_snap.get(name, missing)
        if value is not missing:
            return value
        raise NameError(f"name {name!r} is not defined")

    return (
        g_cmp,
        g_truth,
        g_val,
        g_binop,
        g_unary,
        g_isinstance,
        g_issubclass,
        g_call,
        g_attr,
        g_name,
        g_item,
    )


def pin_cell_bindings(state: State, names: set[str]) -> None:
    """After an instructor cell ran: pin the helpers it bound, trust the classes it defined."""
    for name in names:
        state.instructor_names.add(name)
        value = state.ns.get(name, _MISSING)
        if isinstance(value, type):
            state.extra_trusted.add(value)
        helper_types = (types.FunctionType, types.BuiltinFunctionType, type, types.ModuleType)
        if isinstance(value, helper_types):
            state.pins[name] = value
        else:
            state.pins.pop(name, None)
