// Every kernel group, for the two launch tables (simulated_ops.cpp, device_ops.cu).
#pragma once

#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/embed.cuh"
#include "kernels/cuda/f16_gemm.cuh"
#include "kernels/cuda/kv_attention.cuh"
#include "kernels/cuda/norm.cuh"
#include "kernels/cuda/norm_quantize.cuh"
#include "kernels/cuda/quantize.cuh"
#include "kernels/cuda/rope.cuh"
#include "kernels/cuda/rope_kv.cuh"
#include "kernels/cuda/sample.cuh"
#include "kernels/cuda/ternary_gemm.cuh"
