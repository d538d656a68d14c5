"""checks.py: what the Python tests of this folder share (imported, not a test:
ctest runs only test_*.py). check() counts a failure and goes on, so one run
reports every failed check; the test reads checks.failures at the end.
model_info_crcs() reads `model-info --tensor-crcs`, the C loader's view of a
model file, for comparing with Python's."""
import subprocess

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAILED:", what)


def model_info_crcs(model_info, path):
    """{tensor name: (dtype, dims, CRC-32)} as the C loader reads the file."""
    out = subprocess.run([model_info, "--tensor-crcs", path], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"model-info {path}: {out.stderr.strip()}")
    crcs = {}
    for line in out.stdout.splitlines()[2:]:
        name, dtype, dims, crc = line.split()
        crcs[name] = (dtype, tuple(int(d) for d in dims.split("x")), int(crc, 16))
    return crcs
