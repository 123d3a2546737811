# Finds a System V message queue the host made (key ARGUMENTS["key"]): a channel to and from other students.
import ctypes
import errno

libc = ctypes.CDLL(None, use_errno=True)
found = libc.msgget(ARGUMENTS["key"], 0)  # noqa: F821 (prepended by the test)
raise RuntimeError("seen " + repr({"msgget": "found" if found >= 0 else errno.errorcode.get(ctypes.get_errno())}))
