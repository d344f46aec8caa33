// The synthetic (GSIS) solve on the GPU: the correction operator's products, the multigrid
// W-cycle's stages and GMRES's vector operations. Each kernel is the device twin of a host
// function of src/solver/synthetic (named beside it), with the same arithmetic in the same
// order per cell; the host launchers are in src/solver/synthetic/cuda/.
//
// Layouts (keep in sync with operator.rs, lines.rs, multigrid.rs): a vector holds NV = 5
// doubles per cell; per cell the diagonal block is 25 doubles (row-major), the neighbour
// blocks 6 x 25 floats (sides in Face::ALL order), the neighbours 6 unsigned (NONE: none);
// line factors and inverted diagonals 25 floats per cell; an aggregate's members 8 unsigned
// (NONE-padded). The blocks are stored cell by cell (not split per entry) because a thread
// reads all of a cell's 850 bytes: consecutive threads then read consecutive memory.
// Independent of the case's sizes: compiled once per run without -D constants.
//
// This header starts each of the three programs the kernels are compiled in, side by side
// (synthetic.cu, synthetic_lines.cu, synthetic_factor.cu; src/backend/cuda/kernels.rs,
// SYNTHETIC): one program took 1.0-1.7 s of NVRTC on an H100 host's first run, most of it
// in the line kernels.

#define SYN_NV 5u
#define SYN_NONE 0xffffffffu
#define SYN_BLOCK 256u

__device__ __forceinline__ unsigned syn_thread() {
    return blockIdx.x * blockDim.x + threadIdx.x;
}

// operator.rs::add_product / sub_product: y += (or -=) A x, A an f32 block, in f64; the
// product is summed first, as on the host.
__device__ __forceinline__ void syn_add_product(double y[SYN_NV], const float* __restrict__ a,
                                                const double* __restrict__ x, double sign) {
    for (unsigned r = 0u; r < SYN_NV; r++) {
        double t = 0.0;
        for (unsigned k = 0u; k < SYN_NV; k++) {
            t += (double)a[r * SYN_NV + k] * x[k];
        }
        y[r] += sign * t;
    }
}

// One row of operator.rs::product: an f32 block row times an f64 vector, summed over k in
// order.
__device__ __forceinline__ double syn_row_product(const float* __restrict__ a, const double* x) {
    double t = 0.0;
    for (unsigned k = 0u; k < SYN_NV; k++) {
        t += (double)a[k] * x[k];
    }
    return t;
}

