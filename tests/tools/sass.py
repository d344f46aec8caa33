#!/usr/bin/env python3
"""The fused sweep's SASS for sm_90 without a GPU, to count instructions per point before a
device run (docs/performance.md, "The fused sweep, v6: counted from its SASS").

Needs, in a virtual environment: nvidia-cuda-nvrtc-cu12 (PTX), nvidia-cuda-nvcc-cu12
(ptxas) and nvidia-cuda-cuobjdump (cuobjdump), e.g.
    python3 -m venv /tmp/cudatools
    /tmp/cudatools/bin/pip install nvidia-cuda-nvrtc-cu12 nvidia-cuda-nvcc-cu12 nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm
    (cuobjdump finds nvdisasm on PATH: add its bin directory)
    /tmp/cudatools/bin/python tests/tools/sass.py 64          # NX = NY = NZ = 64, 8x8 tiles
    TX=8 TY=4 MB=3 /tmp/cudatools/bin/python tests/tools/sass.py 32
    SLOTS=4 TX=4 TY=4 MB=3 ... sass.py 64   # the second-order kernel (one rolled level)
It prints ptxas's registers and spills and, per group of 64 cells (one per specialisation of
a level; each cell has one MUFU.EX2), the instructions per cell by opcode. The program is
assembled as src/backend/cuda/kernels.rs does (the same files, the same -D constants for a
cavity row without walls or partner faces); MB is __launch_bounds__'s blocks per SM.
"""
import collections, ctypes, glob, os, re, subprocess, sys, sysconfig

site = sysconfig.get_paths()["purelib"] + "/nvidia/"
root = os.path.join(os.path.dirname(__file__), "../../shaders/cuda/")
files = ["common.cuh", "upwind2.cu", "sweep_slice.cu", "moment_slice.cu", "wall_load_slice.cu", "sweep_fused.cu",
         "sweep_fused2.cu", "sweep_fused_march.cu", "fused_moments.cu"]
src = "\n".join(open(root + f).read() for f in files)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 64
tx, ty, mb = int(os.environ.get("TX", 8)), int(os.environ.get("TY", 8)), os.environ.get("MB", "2")
opts = [f"-DNX={n}u", f"-DNY={n}u", f"-DNZ={n}u", "-DCH=262144u", f"-DSLOTS={os.environ.get('SLOTS', 1)}u", "-DSROW=1u", "-DHAS_WALLS=false",
        "-DM=64u", "-DSTEP=0.12698413f", f"-DTX={tx}u", f"-DTY={ty}u", "-DBV=128u", "-DFCH=262144u",
        f"-DFUSED_MIN_BLOCKS={mb}", "--gpu-architecture=compute_90"]
opts += [f"-D{k}{f}=4294967295u" for f in range(6) for k in ("PART", "EXIT")]
# More NVRTC options for experiments, e.g. EXTRA="-DRUN_UNROLL=8".
opts += os.environ.get("EXTRA", "").split()

lib = ctypes.CDLL(glob.glob(site + "cuda_nvrtc/lib/libnvrtc.so*")[0])
prog = ctypes.c_void_p()
assert lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"k.cu", 0, None, None) == 0
arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
size = ctypes.c_size_t()
if lib.nvrtcCompileProgram(prog, len(opts), arr) != 0:
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    sys.exit(log.value.decode())
lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
ptx = ctypes.create_string_buffer(size.value)
lib.nvrtcGetPTX(prog, ptx)
open("/tmp/knudsen-sass.ptx", "wb").write(ptx.value)
ptxas = glob.glob(site + "cuda_nvcc/bin/ptxas")[0]
info = subprocess.run([ptxas, "-arch=sm_90", "-v", "/tmp/knudsen-sass.ptx", "-o", "/tmp/knudsen-sass.cubin"],
                      capture_output=True, text=True, check=True).stderr
at = info.index("'sweep_fused'")
print("\n".join(info[at:].split("\n")[:4]))
cuobjdump = glob.glob(site + "*/bin/cuobjdump")[0]
sass = subprocess.run([cuobjdump, "-sass", "-fun", "sweep_fused", "/tmp/knudsen-sass.cubin"],
                      capture_output=True, text=True, check=True).stdout
ins = [m.group(1) for m in (re.match(r"\s*/\*[0-9a-f]+\*/\s+(.*?);", l) for l in sass.split("\n")) if m]
ex2 = [i for i, t in enumerate(ins) if "MUFU.EX2" in t]
per = tx * ty
print(f"{len(ins)} instructions, {len(ex2)} cells' updates")
for g in range(len(ex2) // per):
    a, b = ex2[g * per], ex2[g * per + per - 1]
    op = lambda t: re.sub(r"^@!?U?P[T0-9]+\s+", "", t).split()[0].split(".")[0]
    ops = collections.Counter(op(t) for t in ins[a:b])
    top = ", ".join(f"{k} {v / (per - 1):.2f}" for k, v in ops.most_common(10))
    print(f"specialisation {g}: {(b - a) / (per - 1):.1f} per cell ({top})")
