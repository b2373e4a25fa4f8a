// OTLP's protobuf wire format for traces, written by hand: ExportTraceServiceRequest with one
// ResourceSpans (this process) and one ScopeSpans (the server). The field numbers are those of
// the official opentelemetry-proto definitions (collector/trace/v1, trace/v1, common/v1,
// resource/v1); tests/clients/otlp_collector.mjs decodes what this writes with the official
// generated code, so a wrong number or wire type fails a test.
#pragma once

#include "common/trace.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace bitnet::trace {

/// The body of POST /v1/traces (Content-Type application/x-protobuf).
[[nodiscard]] std::string encode_export_request(const std::vector<span_record>& spans,
                                                const attributes& resource,
                                                std::string_view scope_name,
                                                std::string_view scope_version);

} // namespace bitnet::trace
