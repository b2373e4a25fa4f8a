// Which instruction sets this CPU offers, read once with CPUID, and the kernel family chosen from
// them. Every optimised kernel lives in its own translation unit compiled with its own ISA flags;
// the choice between them is made here at run time, never by #if inside a function body.
#pragma once

#include <string_view>

namespace bitnet::kernels {

/// Kernel families, slowest to fastest. Each optimised family has a scalar twin that it must
/// equal bit for bit.
enum class isa { scalar, avx2, avx512_vnni };

struct cpu_features {
    bool avx2 = false;   ///< AVX2 + FMA + F16C, with OS support for YMM state
    bool avx512 = false; ///< AVX-512 F/BW/VL/VNNI, with OS support for ZMM state
};

/// CPUID + XGETBV, computed once.
[[nodiscard]] const cpu_features& detect_cpu_features() noexcept;

/// The best family this CPU runs, lowered by the environment variable BITNET_ISA
/// (scalar|avx2|avx512_vnni) when set, so benchmarks and tests can pin a family. A request above
/// what the CPU supports falls back to the best supported one.
[[nodiscard]] isa best_isa() noexcept;

/// True when BITNET_ISA names a family: then that family (or the best below it) runs every op,
/// and nothing is chosen by measurement.
[[nodiscard]] bool isa_pinned() noexcept;

/// True when this CPU can run kernels of family `i`.
[[nodiscard]] bool isa_supported(isa i) noexcept;

/// The best family this CPU runs that is not above `want` (scalar at worst): how the kernels
/// treat a family argument the CPU lacks.
[[nodiscard]] isa best_isa_up_to(isa want) noexcept;

[[nodiscard]] std::string_view isa_name(isa i) noexcept;

} // namespace bitnet::kernels
