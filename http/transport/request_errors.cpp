#include "http/transport/request_errors.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>

#include <string_view>
#include <vector>

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

namespace {

/// The comma-separated members of every `name` field, trimmed and lower-cased, empty ones
/// dropped (RFC 9110 §5.6.1 lists).
std::vector<std::string> list_members(const boost::beast::http::fields& f,
                                      boost::beast::http::field name) {
    std::vector<std::string> out;
    for (auto it = f.find(name); it != f.end() && it->name() == name; ++it) {
        std::string_view v = it->value();
        while (!v.empty()) {
            const auto comma = v.find(',');
            auto part = v.substr(0, comma);
            while (!part.empty() && (part.front() == ' ' || part.front() == '\t'))
                part.remove_prefix(1);
            while (!part.empty() && (part.back() == ' ' || part.back() == '\t'))
                part.remove_suffix(1);
            if (!part.empty()) {
                std::string m(part.substr(0, part.find(';'))); // no parameters kept
                for (auto& ch : m)
                    ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
                out.push_back(std::move(m));
            }
            if (comma == std::string_view::npos)
                break;
            v.remove_prefix(comma + 1);
        }
    }
    return out;
}

} // namespace

std::optional<api_error> framing_refusal(const boost::beast::http::fields& f, unsigned version) {
    using boost::beast::http::field;
    if (f.count(field::transfer_encoding) > 0) {
        const auto codings = list_members(f, field::transfer_encoding);
        if (codings.empty() || codings.back() != "chunked")
            return status_error(400, "Transfer-Encoding must end in chunked: a request body "
                                     "framed otherwise cannot be read (RFC 9112 section 6.3)");
        for (std::size_t i = 0; i + 1 < codings.size(); ++i) {
            if (codings[i] == "chunked")
                return status_error(400, "Transfer-Encoding applies chunked more than once");
            auto e = status_error(501, "Transfer-Encoding '" + excerpt(codings[i]) +
                                           "' is not supported: this server reads chunked "
                                           "or Content-Length bodies only");
            e.code = "unsupported_transfer_coding";
            e.suggestion = "send the body unencoded (Content-Length) or only chunked";
            return e;
        }
    }
    if (version >= 11 && f.count(field::host) != 1)
        return status_error(400, "an HTTP/1.1 request carries exactly one Host header (it had " +
                                     std::to_string(f.count(field::host)) + ")");
    if (f.count(field::expect) > 0) {
        const auto expect = list_members(f, field::expect);
        if (expect.size() != 1 || expect.front() != "100-continue") {
            auto e = status_error(417, "Expect: only 100-continue is understood");
            e.code = "expectation_failed";
            return e;
        }
    }
    return std::nullopt;
}

bool expects_continue(const boost::beast::http::fields& f, unsigned version) {
    return version >= 11 && f.count(boost::beast::http::field::expect) > 0;
}

} // namespace bitnet::http
