"""What student code may reach, as one table: the worker's run-time guards (sandbox/guard.py) enforce it on
objects, the static pass (rules/reader.py) explains a refusal on the student's line before anything runs.

Plain data and pure functions of names, no imports: the reasons for each denial are in
docs/isolation.md.
"""
import re

# standard library honest code uses; everything else of it reaches files, processes, the interpreter
ALLOWED_STDLIB = frozenset({
    "__future__", "math", "typing", "dataclasses", "functools", "itertools", "contextlib", "collections",
    "collections.abc", "warnings", "logging", "copy", "time", "numbers", "enum", "abc", "typing_extensions", "sys",
    "operator"})
# sys is there for printing (print(..., file=sys.stderr)); nothing else of it
ALLOWED_SYS = frozenset({"stdout", "stderr", "float_info", "maxsize"})
ALLOWED_PACKAGES = ("torch", "numpy", "einops")
# public namespaces of those packages that reach the dispatcher, the compiler stack, files or other processes
DENIED_MODULES = (
    "torch.library", "torch.overrides", "torch.jit", "torch.fx", "torch.compiler", "torch.export", "torch.package",
    "torch.hub", "torch.multiprocessing", "torch.distributed", "torch.onnx", "torch.testing", "torch.serialization",
    "torch.utils.cpp_extension", "torch.utils.data", "torch.utils.backend_registration", "torch.utils.benchmark",
    "torch.utils.tensorboard", "torch.utils.bottleneck", "torch.utils.hooks", "torch.profiler", "torch.autograd.profiler",
    "torch.cuda.tunable",
    "numpy.ctypeslib", "numpy.f2py", "numpy.distutils", "numpy.testing")
# names in allowed standard modules that reach what honest code never touches: copyreg's table of reducers is how
# the worker pickles its answers (a reducer registered there would rewrite them)
DENIED_STDLIB_NAMES = frozenset({"copy.dispatch_table"})
# names in allowed standard modules that read or write attributes and items by a name given as data, past the
# guards that see each `a.b` and `a[k]` the code spells (operator.matmul and the arithmetic stay allowed)
INDIRECT_ACCESS_NAMES = frozenset({"operator.attrgetter", "operator.methodcaller", "operator.itemgetter",
                                   "operator.getitem", "operator.setitem", "operator.delitem",
                                   "dataclasses.make_dataclass"})  # a class from data: bases and namespace unread
# public names on torch that are no module but lead to the same places; from_file and the archive readers open
# a file in C++, where no audit event sees it (grader/sandbox/audit.py)
DENIED_TORCH_NAMES = frozenset({"torch.ops", "torch.classes", "torch.compile", "torch.load", "torch.save",
                                "torch.set_default_device", "torch.from_file", "torch.PyTorchFileReader",
                                "torch.PyTorchFileWriter"})
# methods of torch's classes that open a file in C++ (UntypedStorage.from_file, FloatStorage.from_file, …)
FILE_OPENING_METHODS = frozenset({"from_file"})
# torch's built-in attention as Python names it (F.scaled_dot_product_attention, nn.MultiheadAttention, …) ...
FORBIDDEN_API = re.compile(r"^(scaled_dot_product\w*|multi_head_attention_forward|MultiheadAttention|"
                           r"_native_multi_head_attention|\w*flash_attention\w*|\w*efficient_attention\w*)$")
# ... and as the dispatcher names its operators (aten::_scaled_dot_product_flash_attention, _fused_sdp_choice, …)
FORBIDDEN_OPERATOR = re.compile(r"scaled_dot_product|multi_head_attention|flash_attention|efficient_attention|"
                                r"_fused_sdp|cudnn_attention")
# attributes that tell the grader's meta-device stand-in from a GPU
STAND_IN_ATTRIBUTES = frozenset({"is_meta", "is_fake", "data_ptr", "untyped_storage", "storage", "fake_mode",
                                 "share_memory_", "pin_memory"})  # the last two raise on a stand-in's meta storage
# attributes of frames, generators, tracebacks and code objects: a way out to the grader's globals
INTERPRETER_ATTRIBUTE = re.compile(r"^(gi_\w+|cr_\w+|ag_\w+|f_(back|globals|locals|builtins|code|trace)|"
                                   r"tb_\w+|co_\w+|mro|cell_contents)$")
# special attributes honest code reads; the others lead to code, globals, the class graph or the interpreter
ALLOWED_DUNDERS = frozenset({
    "__init__", "__class__", "__name__", "__qualname__", "__doc__", "__module__", "__version__", "__constants__",
    "__call__", "__len__", "__iter__", "__next__", "__enter__", "__exit__", "__getitem__", "__setitem__",
    "__contains__", "__repr__", "__str__", "__post_init__", "__add__", "__sub__", "__mul__", "__matmul__",
    "__truediv__", "__floordiv__", "__neg__", "__pow__", "__radd__", "__rmul__", "__rtruediv__", "__rmatmul__"})
# special methods a class may not define: they take over torch's or numpy's dispatch, answer a comparison or a
# truth test whatever the values, reach attribute lookup and class creation, or run at pickling and deletion.
# Any other (`__call__`, `__len__`, `__getitem__`, a Protocol's methods) is an honest helper's.
DENIED_SPECIAL_METHODS = frozenset({
    "__torch_function__", "__torch_dispatch__", "__array_function__", "__array_ufunc__",
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__hash__",
    "__getattribute__", "__getattr__", "__setattr__", "__delattr__", "__get__", "__set__", "__delete__",
    "__set_name__", "__init_subclass__", "__class_getitem__", "__instancecheck__", "__subclasscheck__",
    "__mro_entries__", "__prepare__", "__new__", "__del__", "__reduce__", "__reduce_ex__", "__getstate__",
    "__setstate__", "__copy__", "__deepcopy__"})
# special names a class body may bind: TorchScript's __constants__, __slots__, a docstring, __match_args__
CLASS_DUNDERS = frozenset({"__constants__", "__slots__", "__doc__", "__match_args__"})
# modules whose attributes are switches honest code sets (TF32, cuDNN); the worker resets them before every probe
WRITABLE_MODULES = ("torch.backends",)


def allowed_imports(lang: str) -> str:
    """What graded code may import, every module the table allows, as a student reads it (lang "zh" or "en")."""
    stdlib = sorted(ALLOWED_STDLIB - {"sys"})
    if lang == "zh":
        return (f"只导入 {'、'.join(ALLOWED_PACKAGES)}（公开接口），以及 Python 标准库的 {'、'.join(stdlib)} 和 sys"
                f"（只用 {'、'.join(sorted(ALLOWED_SYS))}）。")
    return (f"import only {', '.join(ALLOWED_PACKAGES)} (their public API) and, of Python's standard library, "
            f"{', '.join(stdlib)} and sys (only {', '.join(sorted(ALLOWED_SYS))}).")


def module_allowed(name: str) -> bool:
    """Whether student code may import or reach the module called `name`."""
    if name in ALLOWED_STDLIB:
        return True
    parts = name.split(".")
    if parts[0] not in ALLOWED_PACKAGES or any(part.startswith("_") for part in parts):
        return False
    return not any(name == denied or name.startswith(denied + ".") for denied in DENIED_MODULES)


def denied_attribute_of_torch(owner: str, name: str) -> str | None:
    """What reading `owner.name` (owner a torch module) reaches, when it is denied; else None."""
    path = f"{owner}.{name}"
    if path in DENIED_TORCH_NAMES:
        return path
    return None
