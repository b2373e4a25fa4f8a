// The bitnet error category: names and default texts of errc values.
#include "common/error.hpp"

#include <stdexcept>

namespace bitnet {

const char* errc_name(errc e) noexcept {
    switch (e) {
    case errc::ok:
        return "ok";
    case errc::io_error:
        return "io_error";
    case errc::bad_format:
        return "bad_format";
    case errc::unsupported:
        return "unsupported";
    case errc::invalid_model:
        return "invalid_model";
    case errc::unsupported_shape:
        return "unsupported_shape";
    case errc::invalid_argument:
        return "invalid_argument";
    case errc::tokenizer_error:
        return "tokenizer_error";
    case errc::kv_exhausted:
        return "kv_exhausted";
    case errc::not_found:
        return "not_found";
    case errc::queue_full:
        return "queue_full";
    case errc::prompt_too_long:
        return "prompt_too_long";
    case errc::cancelled:
        return "cancelled";
    case errc::timeout:
        return "timeout";
    case errc::internal:
        return "internal";
    case errc::quota_exceeded:
        return "quota_exceeded";
    case errc::replica_lost:
        return "replica_lost";
    case errc::forbidden:
        return "forbidden";
    case errc::unavailable:
        return "unavailable";
    case errc::draining:
        return "draining";
    }
    return "unknown";
}

namespace {
class category final : public std::error_category {
public:
    const char* name() const noexcept override { return "bitnet"; }
    std::string message(int v) const override { return errc_name(static_cast<errc>(v)); }
};
} // namespace

const std::error_category& bitnet_category() noexcept {
    static const category instance;
    return instance;
}

std::string error::to_string() const {
    return std::string(code.category() == bitnet_category() ? errc_name(value())
                                                            : code.message().c_str()) +
           ": " + message;
}

error unserved_error(const std::string& alias, const std::string& why) {
    return {errc::unavailable, "model '" + alias + "'" + std::string(unserved_phrase) + ": " + why,
            "model"};
}

void throw_exception_from_error(const error& e, const boost::source_location&) {
    throw std::runtime_error(e.to_string());
}

} // namespace bitnet
