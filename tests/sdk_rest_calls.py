"""Which REST calls each public method of the installed azure-ai-ml SDK makes, read off the SDK's own source.

The SDK's `*Operations` classes call its generated REST clients (`azure/ai/ml/_restclient/**`), whose operation
methods call `build_*_request` functions holding the HTTP method and the URL template. This module follows those
calls statically: from a public method through the class's own helpers, its properties and attributes (typed by
what `__init__` assigns, or by annotations), the module functions it hands them to, and the helper `*Operations`
classes it holds (run history, dataplanes), down to the `build_*_request` functions (tests/sdk_source.py reads the
source). A call into another MLClient operation group (`jobs.create_or_update` getting the compute through
`compute.get`) is noted as such, not followed: that operation has its own row.

What it cannot see (a URL built by hand, blob storage through azure-storage-blob, a scoring call through
requests) the page's hand-kept table adds, with its reason (tests/operations_page.py).
"""

import ast
import inspect
import sys
import textwrap
from dataclasses import dataclass, field

from tests import sdk_source
from tests.sdk_source import REST_PACKAGE, RestCall

MAX_DEPTH = 8  # how deep calls are followed: enough for every chain in the SDK, a bound on cycles


@dataclass
class Reach:
    """What one SDK method reaches: its own REST calls, and the other operation groups' methods it calls."""
    calls: set[RestCall] = field(default_factory=set)
    via: set[tuple[str, str]] = field(default_factory=set)  # (MLClient attribute, method)


class CallGraph:
    """Follows one SDK method's calls down to the generated clients' requests."""

    def __init__(self, groups: dict[type, str], root: type):
        self._groups, self._root = groups, root
        self._seen: set = set()
        self.reach = Reach()

    def method_calls(self, cls: type, name: str, depth: int = 0, above: type | None = None) -> None:
        """Follows `cls.name`, or the definition `super()` reaches from class `above`."""
        if cls is not self._root and cls in self._groups and not name.startswith("_"):
            self.reach.via.add((self._groups[cls], name))
            return
        levels = sdk_source.class_levels(cls)
        if above is not None:
            levels = levels[[k for k, _ in levels].index(above) + 1:] if above in cls.__mro__ else []
        level = next(((klass, found[name]) for klass, found in levels if name in found), None)
        if depth > MAX_DEPTH or level is None or (cls, level[0], name) in self._seen:
            return
        self._seen.add((cls, level[0], name))
        klass, defs = level
        for fn in defs:
            self._body(Body(cls, klass, klass.__module__, klass.__module__.startswith(REST_PACKAGE)), fn, {}, depth)

    def _function(self, func, bound: dict[str, type], depth: int) -> None:
        func = inspect.unwrap(func)
        key = (func, tuple(sorted((k, v.__qualname__) for k, v in bound.items())))
        if depth > MAX_DEPTH or key in self._seen:
            return
        self._seen.add(key)
        fn = ast.parse(textwrap.dedent(inspect.getsource(func))).body[0]
        self._body(Body(None, None, func.__module__, False), fn, bound, depth)

    def _body(self, body: "Body", fn, bound, depth) -> None:
        scope, assigned = dict(bound), {}
        for node in ast.walk(fn):  # locals first: `operation = self._client.jobs` then `operation.get(...)`
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                assigned.setdefault(node.target.id, node.value)
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                assigned.setdefault(node.targets[0].id, node.value)
                if (t := body.type_of(node.value, scope)) is not None:
                    scope.setdefault(node.targets[0].id, t)
        for node in ast.walk(fn):
            if isinstance(node, ast.Call):
                if call := _built_by_hand(body, node, scope, assigned):
                    self.reach.calls.add(call)
                else:
                    self._call(body, node, scope, depth)

    def _call(self, body: "Body", node: ast.Call, scope, depth) -> None:
        target = node.func
        if isinstance(target, ast.Name) and target.id.startswith("build_"):  # the generated client's, or the SDK's
            func = vars(sys.modules[body.module]).get(target.id)
            if inspect.isfunction(func) and (call := sdk_source.build_request(func.__module__, target.id)):
                self.reach.calls.add(call)
        elif body.rest:  # a generated client's own helpers (`_create_or_update_initial`)
            if isinstance(target, ast.Attribute) and body.type_of(target.value, scope) is body.cls:
                self.method_calls(body.cls, target.attr, depth + 1)
        elif isinstance(target, ast.Attribute):
            if _is_super(target.value) and body.cls is not None:
                self.method_calls(body.cls, target.attr, depth + 1, above=body.klass)
            elif inspect.isfunction(held := body.type_of(target, scope)):  # an attribute holding a function
                self._function(held, self._bindings(held, node, body, scope), depth + 1)
            elif inspect.isclass(owner := body.type_of(target.value, scope)):
                self.method_calls(owner, target.attr, depth + 1)
        elif isinstance(target, ast.Name) and (func := sdk_source.sdk_function(body.module, target)) is not None:
            self._function(func, self._bindings(func, node, body, scope), depth + 1)

    @staticmethod
    def _bindings(func, call: ast.Call, body: "Body", scope) -> dict[str, type]:
        """The classes of the arguments a module function is handed (self, self._x, or what we hold)."""
        try:
            names = list(inspect.signature(inspect.unwrap(func)).parameters)
        except (TypeError, ValueError):
            return {}
        pairs = list(zip(names, call.args, strict=False)) + [(k.arg, k.value) for k in call.keywords if k.arg]
        return {name: t for name, value in pairs if inspect.isclass(t := body.type_of(value, scope))}


@dataclass(frozen=True)
class Body:
    """Where a function body is read: the instance's class, the class defining the method, its module."""
    cls: type | None
    klass: type | None
    module: str
    rest: bool

    def type_of(self, value, scope):
        """The class of `self`, a name we hold, an attribute of either (an operation group of a client), or an
        entry of MLClient's operations container; or a function an attribute holds."""
        if isinstance(value, ast.Name):
            return self.cls if value.id == "self" and self.cls is not None else scope.get(value.id)
        if isinstance(value, ast.Attribute):
            owner = self.type_of(value.value, scope)
            return sdk_source.attribute_types(owner).get(value.attr) if inspect.isclass(owner) else None
        if (key := sdk_source.container_key(value)) is not None:  # all_operations[AzureMLResourceType.JOB]
            name = key.value if isinstance(key, ast.Constant) else sdk_source.resolve(self.module, key)
            return sdk_source.container().get(name)
        return None


# A request the SDK builds itself: `HttpRequest("POST", f"/subscriptions/{...}/...")`, or a GET through its own
# requests pipeline (`self._requests_pipeline.get(url)`); the URL an f-string, a `.format`ted or joined string.
PIPELINE_VERBS = {"get": "GET", "post": "POST", "put": "PUT", "delete": "DELETE", "patch": "PATCH"}
# Path parameters in the generated clients' spelling, after the segment naming them.
PARAMETERS = {"subscriptions": "{subscriptionId}", "resourceGroups": "{resourceGroupName}",
              "workspaces": "{workspaceName}", "registries": "{registryName}"}


def _built_by_hand(body: "Body", node: ast.Call, scope, assigned) -> RestCall | None:
    target, args = node.func, list(node.args)
    keywords = {k.arg: k.value for k in node.keywords if k.arg}
    if isinstance(target, ast.Name) and target.id == "HttpRequest":
        method, url = keywords.get("method", args[0] if args else None), keywords.get("url", args[1:2] or None)
        url = url[0] if isinstance(url, list) else url
        method = method.value if isinstance(method, ast.Constant) else None
    elif isinstance(target, ast.Attribute) and target.attr in PIPELINE_VERBS \
            and getattr(body.type_of(target.value, scope), "__name__", "") == "HttpPipeline" and args:
        method, url = PIPELINE_VERBS[target.attr], args[0]
    else:
        return None
    text = _text(url, assigned, 0)
    if not method or not text or "/subscriptions/" not in text:
        return None
    segments = text[text.index("/subscriptions/"):].split("?")[0].split("/")
    return RestCall("/".join(PARAMETERS.get(segments[i - 1], s) if s.startswith("{") and i else s
                             for i, s in enumerate(segments)), method)


def _text(node, assigned, depth) -> str | None:
    """A URL's text, its formatted values as `{...}`."""
    if depth > 4 or node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{...}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left, assigned, depth + 1), _text(node.right, assigned, depth + 1)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return _text(node.func.value, assigned, depth + 1)
    if isinstance(node, ast.Name):
        return _text(assigned.get(node.id), assigned, depth + 1)
    return None


def _is_super(node) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def reach(cls: type, name: str, groups: dict[type, str]) -> Reach:
    """What the public method `cls.name` reaches, as far as the SDK's source shows; `groups` names the MLClient
    operation groups' classes (their calls are noted, not followed)."""
    graph = CallGraph(groups, cls)
    graph.method_calls(cls, name)
    return graph.reach
