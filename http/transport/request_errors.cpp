#include "http/transport/request_errors.hpp"

#include <boost/beast/http/error.hpp>

namespace bitnet::http {

api_error status_error(unsigned status, std::string message) {
    api_error e = invalid_value("", std::move(message));
    e.status = status;
    e.code = status == 404   ? "not_found"
             : status == 431 ? "request_header_too_large"
                             : "invalid_request";
    if (status == 404)
        e.type = "not_found_error";
    if (status == 401) {
        e.type = "authentication_error";
        e.code = "invalid_api_key";
        e.suggestion = "send Authorization: Bearer <key>";
    }
    return e;
}

std::optional<api_error> read_refusal(const boost::system::error_code& ec,
                                      const read_limits& limits) {
    using boost::beast::http::error;
    if (ec == error::body_limit)
        return status_error(413, "the body exceeds max_body_bytes (" +
                                     std::to_string(limits.max_body_bytes) + ")");
    // header_limit: the request line and headers; buffer_overflow: a chunked body's trailers,
    // which only the connection's bounded read buffer limits.
    if (ec == error::header_limit || ec == error::buffer_overflow)
        return status_error(431, "the request line and header fields (or trailers) exceed "
                                 "max_header_bytes (" +
                                     std::to_string(limits.max_header_bytes) + ")");
    const bool parser_error = ec.category() == make_error_code(error::bad_method).category();
    if (!parser_error || ec == error::end_of_stream || ec == error::partial_message ||
        ec == error::short_read || ec == error::need_more)
        return std::nullopt;
    return status_error(400, "malformed HTTP request: " + ec.message());
}

} // namespace bitnet::http
