// Shared by the CUDA kernels; prepended by the host (src/backend/cuda/kernels.rs). The grid
// sizes and table strides arrive as -D definitions (NX, NY, NZ, CH, SROW, HAS_WALLS, M,
// STEP, PART0..5, EXIT0..5), the CUDA counterpart of the WGSL `override` constants, so index
// arithmetic folds.

// The slice kernels' arithmetic and storage (sweep_slice, moment_slice, wall_load_slice,
// upwind2, cell_records): f32 by default; with -DKN_F64=1 (`solver.precision = "f64"` on the
// CUDA backend) f64, and the program then holds those kernels only (the fused sweep is f32).
// Keep in sync with src/backend/cuda/real.rs. In f64 the wall word and the velocity index,
// which the f32 records and tables carry as float bits, are stored as exact values instead.
#ifndef KN_F64
#define KN_F64 0
#endif
#if KN_F64
typedef double real;
struct __align__(16) real4 {
    double x, y, z, w;
};
#define R_EXP(x) exp(x)
#define R_ABS(x) fabs(x)
#define R_MIN(a, b) fmin((double)(a), (double)(b))
#define R_MAX(a, b) fmax((double)(a), (double)(b))
#define R_DIV(a, b) ((a) / (b))
#define R_BITS(x) ((unsigned)(x))
#define R_OF_BITS(u) ((double)(u))
#else
typedef float real;
typedef float4 real4;
#define R_EXP(x) __expf(x)
#define R_ABS(x) fabsf(x)
#define R_MIN(a, b) fminf(a, b)
#define R_MAX(a, b) fmaxf(a, b)
#define R_DIV(a, b) __fdividef(a, b)
#define R_BITS(x) __float_as_uint(x)
#define R_OF_BITS(u) __uint_as_float(u)
#endif

// Index of velocity slot v in slice cell s of a chunk's slice storage ([cell][slot], CH
// slots per cell). 64-bit: a chunk may hold more than 2^32 values (128^3 cells x 128^3
// velocities puts 2^20 velocities x 16384 cells in one chunk), and CUDA imposes no binding
// limit that would stop it. Every other buffer is indexed in 32 bits; the host keeps them
// under schedule::MAX_INDEXED_BINDING (src/backend/cuda/mod.rs). Use this for every access
// to `slices` (a unit test in src/backend/wgpu/schedule.rs checks the kernels do).
__device__ __forceinline__ size_t slice_at(unsigned s, unsigned v) { return (size_t)s * CH + v; }

// Start of slot `o` of a slice buffer: SLOTS slices of NX * NY * CH values one after another
// (slot 0: f; under second order, slots 1-3: the face values emitted along x, y, z).
__device__ __forceinline__ size_t slot_at(unsigned o) { return (size_t)o * NX * NY * CH; }

// Wall words (src/grid/solid.rs). Keep in sync with SOLID_BIT there.
#define SOLID 0x80000000u
// A padding slot of a chunk (schedule.rs: GHOST).
#define GHOST 0xffffffffu

// Offset of each face's cells in the face arrays: faces x_min, x_max, y_min, y_max, z_min,
// z_max, numbered as in src/boundary.rs (shaders/face_offset.wgsl).
__device__ __forceinline__ unsigned face_offset(unsigned face) {
    const unsigned nyz = NY * NZ;
    const unsigned nxz = NX * NZ;
    switch (face) {
        case 0u: return 0u;
        case 1u: return nyz;
        case 2u: return 2u * nyz;
        case 3u: return 2u * nyz + nxz;
        case 4u: return 2u * nyz + 2u * nxz;
        default: return 2u * nyz + 2u * nxz + NX * NY;
    }
}

// Partner data of specular and periodic faces (shaders/partner.wgsl, src/boundary.rs::slot).
#define NONE 0xffffffffu

__device__ __forceinline__ unsigned slots() { return M * M * (M / 2u); }

// Slot of global velocity g among those whose component along `axis` is positive (or
// negative); NONE for the others.
__device__ __forceinline__ unsigned slot(unsigned g, unsigned axis, bool positive) {
    const unsigned half = M / 2u;
    unsigned idx[3] = {g % M, (g / M) % M, g / (M * M)};
    const unsigned i = idx[axis];
    if (positive) {
        if (i < M - half) {
            return NONE;
        }
        idx[axis] = i - (M - half);
    } else if (i >= half) {
        return NONE;
    }
    unsigned dims[3] = {M, M, M};
    dims[axis] = half;
    return (idx[2] * dims[1] + idx[1]) * dims[0] + idx[0];
}
