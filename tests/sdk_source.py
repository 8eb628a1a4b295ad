"""The installed azure-ai-ml SDK's source, read for what calls what: its classes' methods as syntax trees, what
their attributes hold (typed by what `__init__` assigns, by annotations, by what MLClient hands down or files in
its operations container), and the generated REST clients' `build_*_request` functions (HTTP method and URL
template). Names are resolved in the modules they are written in, on the imported SDK, so imports under other
names, re-exports and `functools.partial` aliases are followed as Python would. Read by tests/sdk_rest_calls.py.
"""

import ast
import importlib
import inspect
import sys
from dataclasses import dataclass
from functools import cache, partial

SDK_PACKAGE = "azure.ai.ml"
REST_PACKAGE = "azure.ai.ml._restclient"
ML_CLIENT_MODULE = "azure.ai.ml._ml_client"
MAX_DEPTH = 8  # how deep calls are followed: enough for every chain in the SDK, a bound on cycles


@dataclass(frozen=True, order=True)
class RestCall:
    path: str  # the URL template, as the generated client spells it
    method: str  # GET, PUT, POST, ...

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


@cache
def module_tree(module_name: str) -> ast.Module:
    return ast.parse(inspect.getsource(sys.modules[module_name]))


def class_levels(cls: type) -> list[tuple[type, dict[str, list[ast.FunctionDef]]]]:
    """`cls` and its SDK bases, nearest first, each with its methods (overloads together)."""
    levels = []
    for klass in cls.__mro__:
        if not klass.__module__.startswith(SDK_PACKAGE):
            continue
        for node in module_tree(klass.__module__).body:
            if isinstance(node, ast.ClassDef) and node.name == klass.__name__:
                found: dict[str, list[ast.FunctionDef]] = {}
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        found.setdefault(item.name, []).append(item)
                levels.append((klass, found))
    return levels


def class_methods(cls: type) -> dict[str, list[ast.FunctionDef]]:
    """Every method of `cls` and its SDK bases, the nearest definition of each."""
    methods: dict[str, list[ast.FunctionDef]] = {}
    for _, found in class_levels(cls):
        for name, defs in found.items():
            methods.setdefault(name, defs)
    return methods


def resolve(module_name: str, node: ast.expr | None):
    """The object a name, dotted name or annotation (Optional[...] and strings included) stands for, or None."""
    namespace = vars(sys.modules[module_name])
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(node, ast.Subscript):  # Optional[X], "X" | None: the class inside
        return resolve(module_name, node.slice)
    if isinstance(node, ast.BinOp):
        return resolve(module_name, node.left) or resolve(module_name, node.right)
    if isinstance(node, ast.Name):
        found = namespace.get(node.id)
        if isinstance(found, partial):  # ServiceClient012024PreviewArm = partial(MachineLearningServicesMgmtClient, ...)
            found = found.func
        if found is None:  # imported only under TYPE_CHECKING: the operations package re-exports the classes
            found = getattr(importlib.import_module(f"{SDK_PACKAGE}.operations"), node.id, None)
        return found
    if isinstance(node, ast.Attribute):
        owner = resolve(module_name, node.value)
        return getattr(owner, node.attr, None) if owner is not None else None
    return None


def is_class(obj) -> bool:
    return inspect.isclass(obj) and obj.__module__.startswith(SDK_PACKAGE)


def self_attr(node) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _pop_name(value: ast.expr) -> str | None:
    """The key of `kwargs.pop("name", ...)` or `kwargs.get("name")`."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in ("pop", "get") \
            and value.args and isinstance(value.args[0], ast.Constant):
        return value.args[0].value
    return None


def _value_type(module_name: str, value: ast.expr, params: dict[str, type]):
    """The class of what an assignment in __init__ stores: a parameter, a client's operation group, a new
    instance, or a client MLClient hands down by keyword."""
    if isinstance(value, ast.IfExp):
        return _value_type(module_name, value.body, params)
    if isinstance(value, ast.Name):
        return params.get(value.id) or sdk_function(module_name, value)
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id in params:
        return attribute_types(params[value.value.id]).get(value.attr)
    if (key := _pop_name(value)) is not None:  # MLClient itself hands down, it is not handed anything
        return _handed_down().get(key) if module_name != ML_CLIENT_MODULE else None
    if isinstance(value, ast.Call):
        cls = resolve(module_name, value.func)
        return cls if is_class(cls) else None
    return None


@cache
def _handed_down() -> dict[str, type]:
    """What MLClient passes its operations classes by keyword (`service_client_01_2024_preview_arm=self._...`)."""
    from azure.ai.ml import MLClient

    own = attribute_types(MLClient)
    handed: dict[str, type] = {}
    for init in class_methods(MLClient)["__init__"]:
        for node in ast.walk(init):
            if isinstance(node, ast.keyword) and node.arg:
                value = node.value.body if isinstance(node.value, ast.IfExp) else node.value
                if self_attr(value) and value.attr in own:
                    handed.setdefault(node.arg, own[value.attr])
    return handed


@cache
def attribute_types(cls: type) -> dict[str, type]:
    """What `self.<name>` holds, for the names typed by __init__'s assignments or annotations (of `cls` and its
    bases) and by properties' return annotations."""
    types: dict[str, type] = {}
    for klass, found in class_levels(cls):
        for name, defs in found.items():
            for fn in defs:
                _type_from(klass.__module__, name, fn, types)
    return types


def _type_from(module: str, name: str, fn: ast.FunctionDef, types: dict[str, type]) -> None:
    if any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list):
        if is_class(found := resolve(module, fn.returns)):
            types.setdefault(name, found)
    if name != "__init__":
        return
    params = {a.arg: t for a in fn.args.args + fn.args.kwonlyargs if is_class(t := resolve(module, a.annotation))}
    for node in ast.walk(fn):
        if isinstance(node, ast.AnnAssign) and self_attr(node.target) \
                and is_class(found := resolve(module, node.annotation)):
            types.setdefault(node.target.attr, found)
        elif isinstance(node, ast.Assign):
            found = _value_type(module, node.value, params)
            for target in node.targets:
                if isinstance(target, ast.Name) and found:
                    params[target.id] = found  # a local, read by later assignments
                elif self_attr(target) and found:
                    types.setdefault(target.attr, found)


def defining_module(cls: type, name: str) -> str:
    for klass in cls.__mro__:
        if name in vars(klass):
            return klass.__module__
    return cls.__module__


@cache
def build_request(module_name: str, name: str) -> RestCall | None:
    """A generated `build_*_request` function's HTTP method and URL template."""
    for node in module_tree(module_name).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            url = method = None
            for sub in ast.walk(node):
                if isinstance(sub, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_url"
                                                       for t in sub.targets):
                    strings = [c.value for c in ast.walk(sub.value)
                               if isinstance(c, ast.Constant) and isinstance(c.value, str) and "/" in c.value]
                    url = url or (strings[0] if strings else None)
                if isinstance(sub, ast.keyword) and sub.arg == "method" and isinstance(sub.value, ast.Constant):
                    method = sub.value.value
            return RestCall(url, method) if url and method else None
    return None


def container_key(value) -> ast.expr | None:
    """The key of `....all_operations[key]` or `....all_operations.get(key)`."""
    if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Attribute) \
            and value.value.attr == "all_operations":
        return value.slice
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "get" \
            and isinstance(value.func.value, ast.Attribute) and value.func.value.attr == "all_operations" \
            and value.args:
        return value.args[0]
    return None


@cache
def container() -> dict[str, type]:
    """The operations MLClient files in its container: `self._operation_container.add(AzureMLResourceType.JOB,
    self._jobs)`, by key."""
    from azure.ai.ml import MLClient

    own = attribute_types(MLClient)
    filed = {}
    for init in class_methods(MLClient)["__init__"]:
        for node in ast.walk(init):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add" \
                    and len(node.args) == 2 and self_attr(node.args[1]) and node.args[1].attr in own:
                filed[resolve(ML_CLIENT_MODULE, node.args[0])] = own[node.args[1].attr]
    return filed


def sdk_function(module: str, name: ast.Name):
    func = vars(sys.modules[module]).get(name.id)
    if inspect.isfunction(func) and inspect.unwrap(func).__module__.startswith(SDK_PACKAGE):
        return func
    return None
