"""Can student code read a file through torch's C++, where no audit event sees the open?

`torch.from_file(path, size=n)` and `UntypedStorage.from_file` open and map a file in C++: the audit hook
(grader/sandbox/audit.py) hears nothing, and the bytes reached the report in the student's own error message. The
guard refuses every name that opens a file this way, on torch's module and on its storage classes, however it is
reached; and an error's message carries at most a few hundred characters into the report, whatever made it.
"""
import pytest

from grader.sandbox.guard import Guard
from grader.sandbox.probes import describe_error
from grader.sandbox.worker import load_student

pytestmark = pytest.mark.sandbox

OPENERS = {
    "torch.from_file": "torch.from_file('/etc/hostname', size=4, dtype=torch.uint8)",
    "UntypedStorage.from_file": "torch.UntypedStorage.from_file('/etc/hostname', False, 4)",
    "FloatStorage.from_file": "torch.FloatStorage.from_file('/etc/hostname', False, 1)",
    "TypedStorage.from_file": "torch.TypedStorage.from_file",
    "getattr of a storage": "getattr(torch.UntypedStorage, 'from_' + 'file')",
    "an archive reader": "torch.PyTorchFileReader('/etc/hostname')",
    "tunable's file": "torch.cuda.tunable.read_file('/etc/hostname')",
}


@pytest.mark.parametrize("what", sorted(OPENERS))
def test_torch_never_opens_a_file_for_student_code(what):
    guard = Guard()
    namespace, errors = load_student(f"import torch\n\n\ndef read():\n    return {OPENERS[what]}\n", guard)
    assert errors == []
    with pytest.raises(PermissionError):
        namespace["read"]()
    assert guard.seen(), what


def test_an_honest_storage_and_tensor_still_work():
    guard = Guard()
    namespace, errors = load_student("import torch\n\n\ndef honest():\n"
                                     "    return torch.UntypedStorage(4).nbytes() + torch.frombuffer(bytearray(4), "
                                     "dtype=torch.uint8).numel()\n", guard)
    assert errors == [] and namespace["honest"]() == 8 and guard.seen() == []


def test_an_error_message_carries_at_most_600_characters_into_the_report():
    described = describe_error(RuntimeError("file bytes " + "x" * 5000), [])
    assert len(described["message"]) == 600
