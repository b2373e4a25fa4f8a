// Placeholder: the kernel bodies of this group land with issue 16's kernel work.
#pragma once

#include "kernels/cuda/grid.hpp"
#include "kernels/cuda/kernel_args.hpp"

#include <stdexcept>

namespace bitnet::kernels::cuda {

template <class Launcher>
void launch(const kv_append_args&, Launcher&) {
    throw std::logic_error("the kv_append kernel is not written yet");
}

template <class Launcher>
void launch(const paged_attention_args&, Launcher&) {
    throw std::logic_error("the paged_attention kernel is not written yet");
}

} // namespace bitnet::kernels::cuda
