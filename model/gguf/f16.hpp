// The model room's names for the half-precision conversions, which live with the kernels (the
// lower room) so both share one bit-exact implementation.
#pragma once

#include "kernels/f16.hpp"

namespace bitnet::model {
using kernels::bf16_to_f32;
using kernels::f16_to_f32;
using kernels::f32_to_f16;
} // namespace bitnet::model
