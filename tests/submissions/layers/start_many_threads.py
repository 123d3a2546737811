# Starts 200 threads (each counts as a process, as a fork bomb's children do) and reads its process limit.
import threading

release, started = threading.Event(), []
try:
    while len(started) < 200:
        thread = threading.Thread(target=release.wait)
        thread.start()
        started.append(thread)
    stopped_by = "none"
except RuntimeError as error:  # "can't start new thread"
    stopped_by = str(error)
finally:
    release.set()
    for thread in started:
        thread.join()
with open("/proc/self/limits") as table:
    limit = next(line[26:].split()[:2] for line in table if line.startswith("Max processes"))
raise RuntimeError("seen " + repr({"threads": len(started), "stopped by": stopped_by, "limit": limit}))
