// Hopper engine probe: a warp-specialized TMA + wgmma GEMM built only from the prelude's
// sm90 primitives (tilekit/ops/hopper/sm90.cuh, wgmma_ops.cuh), timed beside cuBLAS in the
// same process. C[M,N] (bf16) = A[M,K] @ B[K,N], all row-major, f32 accumulation.
// Build (device machine): nvcc -O3 -std=c++17 -arch=sm_90a -I codegen/prelude proto_gemm.cu -lcuda -lcublas
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cstring>
#include <cmath>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include "tilekit/ops/hopper/sm90.cuh"
#include "tilekit/ops/hopper/wgmma_ops.cuh"

using bf16 = __nv_bfloat16;
using namespace tk::sm90;

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

template <int BM, int BN, int BK, int ST, int NC>
struct Cfg {
    static constexpr int A_BYTES = BM * BK * 2;
    static constexpr int B_BYTES = BK * BN * 2;
    static constexpr int STAGE = A_BYTES + B_BYTES;
    static constexpr int SMEM = ST * STAGE + 1024 + 2 * ST * 8;
    static constexpr int THREADS = (NC + 1) * 128;
    static constexpr int WG_M = BM / NC;  // rows per consumer warpgroup
    static constexpr int MI = WG_M / 64;  // m64 blocks per consumer
};

template <int BM, int BN, int BK, int ST, int NC, int GROUP_M, int WAITD, int PROD = 0>
__global__ void __launch_bounds__((NC + 1) * 128, 1)
gemm_ws(const __grid_constant__ tensor_map ma, const __grid_constant__ tensor_map mb, const bf16* __restrict__ A, const bf16* __restrict__ B, bf16* __restrict__ C, int M, int N, int K) {
    using G = Cfg<BM, BN, BK, ST, NC>;
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = (unsigned char*)(((unsigned long long)smem_raw + 1023) & ~1023ull);
    unsigned long long* full = (unsigned long long*)(smem + ST * G::STAGE);
    unsigned long long* empty = full + ST;
    const int wg = threadIdx.x / 128;
    const int tid = threadIdx.x % 128;
    if (threadIdx.x == 0) {
        for (int s = 0; s < ST; ++s) { mbar_init(&full[s], PROD ? 128 : 1); mbar_init(&empty[s], NC); }
        fence_barrier_init();
    }
    __syncthreads();
    const int tm = (M + BM - 1) / BM, tn = (N + BN - 1) / BN, tiles = tm * tn;
    const int kb = (K + BK - 1) / BK;
    auto tile_of = [&](int t, int& pm, int& pn) {
        const int per_group = GROUP_M * tn;
        const int g = t / per_group, first = g * GROUP_M;
        const int rows = min(tm - first, GROUP_M);
        pm = first + (t % per_group) % rows;
        pn = (t % per_group) / rows;
    };
    if (wg == 0) {
        setmaxnreg_dec<PROD ? 56 : 40>();
        if (PROD) {
            int it = 0;
            for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
                int pm, pn;
                tile_of(t, pm, pn);
                for (int k = 0; k < kb; ++k, ++it) {
                    const int s = it % ST;
                    mbar_wait(&empty[s], ((it / ST) & 1) ^ 1);
                    const unsigned sa = saddr(smem + s * G::STAGE);
                    const unsigned sb = sa + G::A_BYTES;
#pragma unroll
                    for (int p = 0; p < BM * 8 / 128; ++p) {
                        const int q = tid + p * 128, r = q / 8, c = q % 8;
                        const long long gr = (long long)pm * BM + r, gc = (long long)k * BK + c * 8;
                        const bool in = gr < M && gc < K;
                        const bf16* src = in ? A + gr * K + gc : A;
                        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(sa + r * 128 + ((c ^ (r & 7)) * 16)), "l"(src), "r"(in ? 16 : 0) : "memory");
                    }
#pragma unroll
                    for (int p = 0; p < BK * (BN / 8) / 128; ++p) {
                        const int q = tid + p * 128, r = q / (BN / 8), cc = q % (BN / 8), c = cc % 8;
                        const long long gr = (long long)k * BK + r, gc = (long long)pn * BN + cc * 8;
                        const bool in = gr < K && gc < N;
                        const bf16* src = in ? B + gr * N + gc : B;
                        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(sb + (cc / 8) * BK * 128 + r * 128 + ((c ^ (r & 7)) * 16)), "l"(src), "r"(in ? 16 : 0) : "memory");
                    }
                    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(saddr(&full[s])) : "memory");
                }
            }
        } else if (tid == 0) {
            int it = 0;
            for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
                int pm, pn;
                tile_of(t, pm, pn);
                for (int k = 0; k < kb; ++k, ++it) {
                    const int s = it % ST;
                    mbar_wait(&empty[s], ((it / ST) & 1) ^ 1);
                    unsigned char* sa = smem + s * G::STAGE;
                    unsigned char* sb = sa + G::A_BYTES;
                    mbar_arrive_expect_tx(&full[s], G::STAGE);
                    tma_load_2d(sa, &ma, &full[s], k * BK, pm * BM);
#pragma unroll
                    for (int p = 0; p < BN / 64; ++p) tma_load_2d(sb + p * BK * 128, &mb, &full[s], pn * BN + p * 64, k * BK);
                }
            }
        }
    } else {
        setmaxnreg_inc<PROD ? 224 : 232>();
        const int c = wg - 1;
        float acc[G::MI][BN / 2];
        int it = 0;
        for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
            int pm, pn;
            tile_of(t, pm, pn);
#pragma unroll
            for (int i = 0; i < G::MI; ++i)
#pragma unroll
                for (int j = 0; j < BN / 2; ++j) acc[i][j] = 0.f;
            for (int k = 0; k < kb; ++k, ++it) {
                const int s = it % ST;
                mbar_wait(&full[s], (it / ST) & 1);
                if (PROD) asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
                unsigned char* sa = smem + s * G::STAGE + c * G::WG_M * 128;
                unsigned char* sb = smem + s * G::STAGE + G::A_BYTES;
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk) {
#pragma unroll
                    for (int i = 0; i < G::MI; ++i) {
                        const unsigned long long da = smem_desc_sw128(sa + i * 64 * 128 + kk * 32, 16, 1024);
                        const unsigned long long db = smem_desc_sw128(sb + kk * 2048, BK * 128, 1024);
                        wgmma_n<BN, bf16>::template run<0, 1>(acc[i], da, db, 1);
                    }
                }
                wgmma_commit();
                if (WAITD == 0) {
                    wgmma_wait<0>();
                    if (tid == 0) mbar_arrive(&empty[s]);
                } else {
                    wgmma_wait<1>();
                    if (k > 0 && tid == 0) mbar_arrive(&empty[(it - 1) % ST]);
                }
            }
            if (WAITD != 0) {
                wgmma_wait<0>();
                if (kb > 0 && tid == 0) mbar_arrive(&empty[(it - 1) % ST]);
            }
            // Epilogue straight from the accumulator registers.
            const int w = tid / 32, l = tid % 32;
#pragma unroll
            for (int i = 0; i < G::MI; ++i) {
#pragma unroll
                for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const int row = pm * BM + c * G::WG_M + i * 64 + w * 16 + l / 4 + h * 8;
                        const int col = pn * BN + j * 8 + (l % 4) * 2;
                        if (row < M && col + 1 < N) {
                            __nv_bfloat162 v = __floats2bfloat162_rn(acc[i][j * 4 + h * 2], acc[i][j * 4 + h * 2 + 1]);
                            *(__nv_bfloat162*)&C[(long long)row * N + col] = v;
                        } else if (row < M && col < N) {
                            C[(long long)row * N + col] = __float2bfloat16(acc[i][j * 4 + h * 2]);
                        }
                    }
                }
            }
        }
    }
}

__global__ void ref_gemm(const bf16* A, const bf16* B, float* R, int M, int N, int K, int rows, int stride) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * N) return;
    const int r = (i / N) * stride, c = i % N;
    float s = 0;
    for (int k = 0; k < K; ++k) s += __bfloat162float(A[(long long)r * K + k]) * __bfloat162float(B[(long long)k * N + c]);
    R[i] = s;
}

__global__ void fill(bf16* p, long long n, unsigned seed) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = (unsigned)i * 2654435761u + seed * 97u;
    x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    p[i] = __float2bfloat16(((int)(x % 17) - 8) / 8.0f);
}

static PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q;
    CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q));
    return (PFN_cuTensorMapEncodeTiled_v12000)f;
}

static tensor_map make_map(const bf16* p, long long rows, long long cols, int box_cols, int box_rows) {
    CUtensorMap m;
    cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    cuuint64_t strides[1] = {(cuuint64_t)cols * 2};
    cuuint32_t box[2] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows};
    cuuint32_t es[2] = {1, 1};
    CUresult r = encode_fn()(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void*)p, dims, strides, box, es,
                             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) { printf("encode failed %d\n", (int)r); exit(1); }
    tensor_map t;
    memcpy(&t, &m, sizeof(t));
    return t;
}

template <int BM, int BN, int BK, int ST, int NC, int GM, int WAITD, int PROD = 0>
static double run_cfg(int M, int N, int K, int sets, bf16** A, bf16** B, bf16** Cs, const char* name, int nsm, int persist_ctas, bool check) {
    using G = Cfg<BM, BN, BK, ST, NC>;
    auto k = gemm_ws<BM, BN, BK, ST, NC, GM, WAITD, PROD>;
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, G::SMEM));
    std::vector<tensor_map> mas(sets), mbs(sets);
    for (int i = 0; i < sets; ++i) { mas[i] = make_map(A[i], M, K, 64, BM); mbs[i] = make_map(B[i], K, N, 64, BK); }
    const int tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
    const int grid = std::min(tiles, persist_ctas > 0 ? persist_ctas : nsm);
    // correctness on set 0
    if (check) {
        CK(cudaMemset(Cs[0], 0xFF, (size_t)M * N * 2));
        k<<<grid, G::THREADS, G::SMEM>>>(mas[0], mbs[0], A[0], B[0], Cs[0], M, N, K);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        const int rows = 64, stride = std::max(1, M / rows);
        float* R; CK(cudaMalloc(&R, (size_t)rows * N * 4));
        ref_gemm<<<(rows * N + 255) / 256, 256>>>(A[0], B[0], R, M, N, K, rows, stride);
        CK(cudaDeviceSynchronize());
        std::vector<float> hr((size_t)rows * N);
        std::vector<bf16> hc((size_t)N);
        CK(cudaMemcpy(hr.data(), R, hr.size() * 4, cudaMemcpyDeviceToHost));
        double maxerr = 0; long long bad = 0;
        for (int r = 0; r < rows; ++r) {
            CK(cudaMemcpy(hc.data(), Cs[0] + (size_t)r * stride * N, (size_t)N * 2, cudaMemcpyDeviceToHost));
            for (int c = 0; c < N; ++c) {
                const double ref = hr[(size_t)r * N + c], got = __bfloat162float(hc[c]);
                const double err = fabs(ref - got) / (1.0 + fabs(ref));
                if (!(err <= 1e-2)) ++bad;
                maxerr = std::max(maxerr, err != err ? 1e9 : err);
            }
        }
        CK(cudaFree(R));
        printf("  check %s %dx%dx%d: max rel err %.3g, bad %lld\n", name, M, N, K, maxerr, bad);
    }
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0); cudaEventCreate(&e1);
    for (int w = 0; w < 5; ++w) k<<<grid, G::THREADS, G::SMEM>>>(mas[w % sets], mbs[w % sets], A[w % sets], B[w % sets], Cs[w % sets], M, N, K);
    std::vector<float> ts;
    for (int r = 0; r < 30; ++r) {
        const int i = r % sets;
        cudaEventRecord(e0);
        k<<<grid, G::THREADS, G::SMEM>>>(mas[i], mbs[i], A[i], B[i], Cs[i], M, N, K);
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float ms; cudaEventElapsedTime(&ms, e0, e1); ts.push_back(ms);
    }
    CK(cudaGetLastError());
    std::sort(ts.begin(), ts.end());
    const double ms = ts[ts.size() / 2];
    const double tf = 2.0 * M * N * K / (ms * 1e-3) / 1e12;
    printf("%-34s %5dx%5dx%5d grid %4d: %.4f ms %.1f TFLOP/s\n", name, M, N, K, grid, ms, tf);
    return tf;
}

static double run_cublas(cublasHandle_t h, int M, int N, int K, int sets, bf16** A, bf16** B, bf16** Cs) {
    float alpha = 1, beta = 0;
    auto go = [&](int i) {
        // Row-major C = A B is column-major C^T = B^T A^T.
        cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B[i], CUDA_R_16BF, N, A[i], CUDA_R_16BF, K, &beta, Cs[i],
                     CUDA_R_16BF, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    };
    for (int w = 0; w < 5; ++w) go(w % sets);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0); cudaEventCreate(&e1);
    std::vector<float> ts;
    for (int r = 0; r < 30; ++r) {
        cudaEventRecord(e0); go(r % sets); cudaEventRecord(e1); cudaEventSynchronize(e1);
        float ms; cudaEventElapsedTime(&ms, e0, e1); ts.push_back(ms);
    }
    std::sort(ts.begin(), ts.end());
    const double ms = ts[ts.size() / 2];
    const double tf = 2.0 * M * N * K / (ms * 1e-3) / 1e12;
    printf("%-34s %5dx%5dx%5d           : %.4f ms %.1f TFLOP/s\n", "cuBLAS", M, N, K, ms, tf);
    return tf;
}

int main(int argc, char** argv) {
    int nsm; CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
    cublasHandle_t h; cublasCreate(&h);
    const int shapes[][3] = {{8192, 8192, 8192}, {4096, 4096, 4096}, {1000, 1000, 1000}};
    for (auto& s : shapes) {
        const int M = s[0], N = s[1], K = s[2];
        const long long bytes = ((long long)M * K + (long long)K * N + (long long)M * N) * 2;
        const int sets = (int)std::max(1LL, std::min(8LL, (200LL << 20) / bytes + 1));
        std::vector<bf16*> A(sets), B(sets), C(sets);
        for (int i = 0; i < sets; ++i) {
            CK(cudaMalloc(&A[i], (size_t)M * K * 2)); CK(cudaMalloc(&B[i], (size_t)K * N * 2)); CK(cudaMalloc(&C[i], (size_t)M * N * 2));
            fill<<<(int)(((long long)M * K + 255) / 256), 256>>>(A[i], (long long)M * K, 1 + i);
            fill<<<(int)(((long long)K * N + 255) / 256), 256>>>(B[i], (long long)K * N, 100 + i);
        }
        CK(cudaDeviceSynchronize());
        printf("shape %dx%dx%d (%d input sets)\n", M, N, K, sets);
        run_cublas(h, M, N, K, sets, A.data(), B.data(), C.data());
        run_cfg<128, 256, 64, 4, 2, 8, 0>(M, N, K, sets, A.data(), B.data(), C.data(), "tma 128x256x64 s4 c2 wait0", nsm, 0, true);
        run_cfg<128, 256, 64, 4, 2, 8, 0, 1>(M, N, K, sets, A.data(), B.data(), C.data(), "cpasync 128x256x64 s4 c2 wait0", nsm, 0, true);
        run_cfg<128, 256, 64, 4, 2, 8, 1, 1>(M, N, K, sets, A.data(), B.data(), C.data(), "cpasync 128x256x64 s4 c2 wait1", nsm, 0, false);
        run_cfg<128, 128, 64, 6, 2, 8, 0, 1>(M, N, K, sets, A.data(), B.data(), C.data(), "cpasync 128x128x64 s6 c2 wait0", nsm, 0, true);
        run_cfg<256, 128, 64, 4, 2, 8, 0, 1>(M, N, K, sets, A.data(), B.data(), C.data(), "cpasync 256x128x64 s4 c2 wait0", nsm, 0, true);
        run_cfg<128, 128, 64, 6, 2, 8, 0>(M, N, K, sets, A.data(), B.data(), C.data(), "tma 128x128x64 s6 c2 wait0", nsm, 0, false);
        run_cfg<64, 128, 64, 8, 1, 8, 0, 1>(M, N, K, sets, A.data(), B.data(), C.data(), "cpasync 64x128x64 s8 c1 wait0", nsm, 0, true);
        for (int i = 0; i < sets; ++i) { cudaFree(A[i]); cudaFree(B[i]); cudaFree(C[i]); }
    }
    return 0;
}
