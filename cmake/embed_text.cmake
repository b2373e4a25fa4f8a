# cmake -DINPUT=FILE -DOUTPUT=FILE.cpp -DNAMESPACE=ns -DFUNCTION=name -DHEADER=room/x.hpp -P embed_text.cmake
# Writes a .cpp whose FUNCTION() returns INPUT's bytes as a std::string_view, so a document that
# is committed as its own file (reviewable, checked by tools that read it) ships inside the binary.
# Bytes, not a raw string literal: no delimiter can collide with the text.
file(READ "${INPUT}" _hex HEX)
string(LENGTH "${_hex}" _hex_len)
math(EXPR _size "${_hex_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," _bytes "${_hex}")
string(REGEX REPLACE "((('\\\\x[0-9a-f][0-9a-f]',){24}))" "\\1\n    " _bytes "${_bytes}")
get_filename_component(_name "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp"
     "// Generated from ${_name} by cmake/embed_text.cmake: edit the input, not this file.\n"
     "#include \"${HEADER}\"\n\n"
     "namespace ${NAMESPACE} {\n\nnamespace {\n"
     "constexpr char k_bytes[] = {\n    ${_bytes}'\\0'};\n} // namespace\n\n"
     "std::string_view ${FUNCTION}() noexcept {\n"
     "    return {k_bytes, ${_size}};\n}\n\n} // namespace ${NAMESPACE}\n")
# Only a changed text touches the output, so an unrelated reconfigure recompiles nothing.
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
