#include "model/engine/placement/engine_placement.hpp"

#include "common/placement_name.hpp"
#include "kernels/cuda/ops.hpp"
#include "model/engine/cuda/cuda_engine.hpp"

#include <charconv>
#include <string>

namespace bitnet::model {

result<placement> parse_placement(std::string_view text) {
    // The grammar lives once, in common/placement_name.hpp (conf and http check names with it);
    // "auto" is a name there but a choice to make, not a placement, here.
    if (text == "auto")
        return error(errc::invalid_argument, "device \"auto\" is a choice, not a placement");
    if (auto why = placement_name_problem(text); !why.empty())
        return error(errc::invalid_argument, "device " + why);
    if (text == "cpu")
        return placement{"cpu", 0};
    if (text == "cuda")
        return placement{"cuda", 0};
    const auto colon = text.find(':');
    int index = 0;
    std::from_chars(text.data() + colon + 1, text.data() + text.size(), index);
    return placement{std::string(text.substr(0, colon)), index};
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
