// The project's one error vocabulary: `errc`, its std::error_category, and the `result<T>` alias
// that model/ and kernels' dispatchers return. Messages carry the detail an operator acts on.
#pragma once

#include <boost/system/result.hpp>

#include <ostream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace bitnet {

/// Every error condition the project reports. Values are stable (they appear in logs).
enum class errc {
    ok = 0,
    io_error = 1,          ///< open/read/mmap of a file failed
    bad_format = 2,        ///< the bytes do not follow the file format
    unsupported = 3,       ///< valid format, but a version/type/architecture we do not handle
    invalid_model = 4,     ///< hyper-parameters or tensors do not fit the architecture
    unsupported_shape = 5, ///< a kernel has no implementation for this shape
    invalid_argument = 6,  ///< a caller passed a value outside its documented range
    tokenizer_error = 7,   ///< vocabulary/merges unusable, or text cannot be tokenized
    kv_exhausted = 8,      ///< no free KV-cache block within the byte budget
    not_found = 9,         ///< a named thing (key, tensor, model alias) does not exist
    queue_full = 10,       ///< admission refused: waiting queue at its cap
    prompt_too_long = 11,  ///< prompt does not fit the context window
    cancelled = 12,        ///< the request was cancelled (client gone)
    timeout = 13,          ///< a deadline passed
    internal = 14,         ///< a bug: an invariant did not hold
    quota_exceeded = 15,   ///< admission refused: the API key's request quota is used up
    replica_lost = 16,     ///< every replica of the model that ran the request is gone (cluster)
    forbidden = 17,        ///< a cluster peer asked for what its role does not allow
    unavailable = 18,      ///< the model exists but nothing serves it (its load failed)
    draining = 19,         ///< admission refused: the server is shutting down (try another)
};

const std::error_category& bitnet_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), bitnet_category()};
}

/// An error with its code and a message naming what is wrong and where. `param` names the
/// request field at fault when the caller's input is (HTTP reports it as the error's `param`).
struct error {
    std::error_code code;
    std::string message;
    std::string param;

    error() = default;
    error(errc e, std::string msg, std::string field = {})
        : code(make_error_code(e))
        , message(std::move(msg))
        , param(std::move(field)) {}

    [[nodiscard]] errc value() const noexcept { return static_cast<errc>(code.value()); }
    /// "bad_format: <message>"
    [[nodiscard]] std::string to_string() const;
};

inline std::ostream& operator<<(std::ostream& os, const error& e) {
    return os << e.to_string();
}

/// Return type of every fallible function in model/ and the kernel dispatchers.
template <class T>
using result = boost::system::result<T, error>;

/// The name of an errc value, e.g. "bad_format".
const char* errc_name(errc e) noexcept;

/// An `unavailable` error's message: "model 'alias' failed and serves nothing: why". Whatever
/// follows the phrase is the operator's detail (a load failure names paths), which HTTP shows only
/// to the admin key (http/errors.hpp, without_operator_detail).
[[nodiscard]] error unserved_error(const std::string& alias, const std::string& why);
inline constexpr std::string_view unserved_phrase = " failed and serves nothing";

} // namespace bitnet

namespace std {
template <>
struct is_error_code_enum<bitnet::errc> : true_type {};
} // namespace std

namespace bitnet {
// boost::system::result needs to know how to throw our error type from .value().
[[noreturn]] void throw_exception_from_error(const error& e, const boost::source_location& loc);
} // namespace bitnet

/// Early return of an error from a function returning result<U>.
#define BITNET_TRY(expr)                                                                           \
    do {                                                                                           \
        auto&& bitnet_try_r_ = (expr);                                                             \
        if (!bitnet_try_r_)                                                                        \
            return bitnet_try_r_.error();                                                          \
    } while (0)
