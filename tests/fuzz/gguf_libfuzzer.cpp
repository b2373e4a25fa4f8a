// libFuzzer entry for the GGUF reader (built only with clang and BITNET_LIBFUZZER=ON).
#include "gguf_fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    bitnet::fuzz::check_gguf_bytes({data, size});
    return 0;
}
