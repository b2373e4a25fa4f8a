#include "model/engine/engine_placement.hpp"

#include "kernels/cuda/ops.hpp"
#include "model/engine/cuda_engine.hpp"

#include <charconv>
#include <string>

namespace bitnet::model {

result<placement> parse_placement(std::string_view text) {
    if (text == "cpu")
        return placement{"cpu", 0};
    if (text == "cuda")
        return placement{"cuda", 0};
    for (std::string_view kind : {std::string_view("cuda"), std::string_view("sim")}) {
        if (text.size() > kind.size() + 1 && text.substr(0, kind.size()) == kind &&
            text[kind.size()] == ':') {
            const std::string_view digits = text.substr(kind.size() + 1);
            int index = -1;
            const auto [end, ec] =
                std::from_chars(digits.data(), digits.data() + digits.size(), index);
            if (ec == std::errc() && end == digits.data() + digits.size() && index >= 0 &&
                index < 64)
                return placement{std::string(kind), index};
        }
    }
    return error(errc::invalid_argument,
                 "device \"" + std::string(text) + "\" is not cpu, cuda, cuda:N or sim:N");
}

result<std::unique_ptr<engine>> load_engine_on(const engine_options& opt, const placement& where) {
    if (where.kind == "cpu")
        return engine::load(opt);
    namespace cuda = kernels::cuda;
    std::unique_ptr<cuda::ops> device;
    if (where.kind == "sim") {
        device = cuda::make_simulated_ops();
    } else {
        // The device first: a machine without a driver or a GPU says so before the file is read.
        try {
            device = cuda::make_device_ops(where.index);
        } catch (const cuda::device_error& e) {
            // "cuda:0: no_driver: <the runtime's words>" (the device's own prefix said once).
            std::string_view why = e.what();
            const std::string prefix = where.name() + ": ";
            if (why.substr(0, prefix.size()) == prefix)
                why.remove_prefix(prefix.size());
            return error(errc::unsupported,
                         prefix + cuda::failure_name(e.kind()) + ": " + std::string(why));
        }
    }
    return load_cuda_engine(opt, std::move(device));
}

} // namespace bitnet::model
