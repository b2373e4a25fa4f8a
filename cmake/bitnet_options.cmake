# Warnings, sanitizers and ccache shared by every target of the project.

find_program(BITNET_CCACHE ccache)
if(BITNET_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
    set(CMAKE_CXX_COMPILER_LAUNCHER ${BITNET_CCACHE})
    set(CMAKE_C_COMPILER_LAUNCHER ${BITNET_CCACHE})
endif()

if(BITNET_SANITIZE)
    add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                        -fno-sanitize-recover=undefined)
    add_link_options(-fsanitize=address,undefined)
endif()

# bitnet_set_warnings(target): the project's warning set; -Werror only when BITNET_WERROR is on.
function(bitnet_set_warnings tgt)
    target_compile_options(${tgt} PRIVATE
        -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wimplicit-fallthrough)
    if(BITNET_WERROR)
        target_compile_options(${tgt} PRIVATE -Werror)
    endif()
    # GCC 12 (Debian 12's compiler) at -O2/-O3 reports string concatenation such as
    # "'" + std::string(x) + "' is not ..." as an overlapping, oversized or out-of-bounds memcpy
    # inside libstdc++ (GCC bug 105329; with -Wrestrict off, the same reports come back as
    # -Warray-bounds): about 50 warnings in a release build, none of them real, which bury
    # anything else a newcomer's `make serve` prints. Off in those builds only: the dev build
    # (-O1, -Werror) keeps all three, and the sanitizer build checks the same code at run time.
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
        target_compile_options(${tgt} PRIVATE
            $<$<NOT:$<CONFIG:Debug>>:-Wno-restrict -Wno-stringop-overflow -Wno-array-bounds>)
    endif()
endfunction()

# bitnet_glue_code(target): in the Debug builds (dev, asan), compile a target whose time goes to
# messages, requests and template plumbing (CAF, Beast) rather than to loops at -O0 instead of the
# preset's -O1. Those rooms and their tests were most of a cold build, and -O1 costs them about
# two thirds more compile time (under the sanitizers, a Beast session file took 127 s against 76 s)
# while their tests spend their time in the model's code, which keeps -O1. The last -O wins.
function(bitnet_glue_code tgt)
    if(CMAKE_BUILD_TYPE STREQUAL "Debug")
        target_compile_options(${tgt} PRIVATE -O0)
    endif()
endfunction()

# bitnet_precompile(target HEADERS...): compile the headers a target's files share (CAF, Beast,
# Boost.JSON, doctest) once per target instead of once per file. In the glue rooms and their
# suites parsing those headers was a quarter to a half of each file's compile time, in both the
# dev and the sanitizer builds that CI makes (bench/RESULTS.md, "CI time"). Every file of the
# target sees them as if it began with those includes; BITNET_PCH=OFF turns it off.
option(BITNET_PCH "precompile the headers each glue target's files share" ON)
function(bitnet_precompile tgt)
    if(NOT BITNET_PCH)
        return()
    endif()
    target_precompile_headers(${tgt} PRIVATE ${ARGN})
    # ccache caches such files only when told to be sloppy about what a precompiled header hides
    # from it (its manual, "Precompiled headers"); otherwise each would compile uncached. The
    # project's sources use no __DATE__ or __TIME__.
    if(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache")
        set_property(TARGET ${tgt} PROPERTY CXX_COMPILER_LAUNCHER env
            CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
            ${CMAKE_CXX_COMPILER_LAUNCHER})
    endif()
endfunction()

# bitnet_precompile_reuse(target FROM): the sub-rooms of one glue room share one precompiled
# header (their first library's) instead of compiling one each: a .gch costs 15-18 s on our
# machines (docs/ARCHITECTURE.md §5), and the sub-rooms' files include the same CAF/Beast headers.
# The targets' compile options and definitions must match, as those of one room's sub-rooms do.
function(bitnet_precompile_reuse tgt from)
    if(NOT BITNET_PCH)
        return()
    endif()
    target_precompile_headers(${tgt} REUSE_FROM ${from})
    if(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache")
        set_property(TARGET ${tgt} PROPERTY CXX_COMPILER_LAUNCHER env
            CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
            ${CMAKE_CXX_COMPILER_LAUNCHER})
    endif()
endfunction()

# bitnet_room_include_dir(var name): an include folder that holds only the calling room, as a link
# named after its path (<build>/room_include/<name>/model/gguf -> <source>/model/gguf), so that a
# target sees "model/gguf/..." only when it links that room's library (directly or through a public
# dependency): the build refuses an include across a missing edge instead of finding it by accident.
# FILES_ONLY (a room whose folder also holds sub-rooms, e.g. actors/ or http/): one link per header
# directly in the folder instead of one for the folder, so its sub-rooms' headers stay out of reach
# of a target that links only the room's shared part.
function(bitnet_room_include_dir var name)
    cmake_parse_arguments(ARG "FILES_ONLY" "" "" ${ARGN})
    file(RELATIVE_PATH _rel ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
    set(_root ${PROJECT_BINARY_DIR}/room_include/${name})
    if(ARG_FILES_ONLY)
        # Rebuilt at each configure, so a header moved away leaves no stale link behind.
        file(REMOVE_RECURSE ${_root})
        file(MAKE_DIRECTORY ${_root}/${_rel})
        file(GLOB _headers CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.hpp)
        foreach(_h ${_headers})
            get_filename_component(_n ${_h} NAME)
            file(CREATE_LINK ${_h} ${_root}/${_rel}/${_n} SYMBOLIC)
        endforeach()
    else()
        get_filename_component(_parent ${_root}/${_rel} DIRECTORY)
        file(MAKE_DIRECTORY ${_parent})
        file(CREATE_LINK ${CMAKE_CURRENT_SOURCE_DIR} ${_root}/${_rel} SYMBOLIC)
    endif()
    set(${var} ${_root} PARENT_SCOPE)
endfunction()

# bitnet_room(name [FILES_ONLY] [SUBDIRS dir...] PUBLIC_DEPS ... PRIVATE_DEPS ... EXTRA_SOURCES ...):
# a room's static library from every .cpp directly in its folder (and in SUBDIRS, folders that are
# part of the room rather than sub-rooms of their own, as kernels/cpu/). It exposes its own folder
# only (bitnet_room_include_dir; FILES_ONLY there); other rooms come with its deps.
function(bitnet_room name)
    cmake_parse_arguments(ARG "FILES_ONLY" "" "PUBLIC_DEPS;PRIVATE_DEPS;EXTRA_SOURCES;SUBDIRS" ${ARGN})
    set(_globs ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
    foreach(_d ${ARG_SUBDIRS})
        list(APPEND _globs ${CMAKE_CURRENT_SOURCE_DIR}/${_d}/*.cpp)
    endforeach()
    file(GLOB _srcs CONFIGURE_DEPENDS ${_globs})
    if(ARG_FILES_ONLY)
        bitnet_room_include_dir(_inc ${name} FILES_ONLY)
    else()
        bitnet_room_include_dir(_inc ${name})
    endif()
    if(NOT _srcs AND NOT ARG_EXTRA_SOURCES)
        # Headers only (a room's shared part, or a room whose code has not arrived yet): the same
        # dependency edges.
        add_library(bitnet_${name} INTERFACE)
        target_include_directories(bitnet_${name} INTERFACE ${_inc})
        target_link_libraries(bitnet_${name} INTERFACE ${ARG_PUBLIC_DEPS})
        return()
    endif()
    add_library(bitnet_${name} STATIC ${_srcs} ${ARG_EXTRA_SOURCES})
    target_include_directories(bitnet_${name} PUBLIC ${_inc})
    target_link_libraries(bitnet_${name} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
    bitnet_set_warnings(bitnet_${name})
endfunction()

# bitnet_rooms_aggregate(name libs...): one INTERFACE target naming a room's sub-rooms, for the
# rooms and tools above it that use the room as a whole.
function(bitnet_rooms_aggregate name)
    add_library(${name} INTERFACE)
    target_link_libraries(${name} INTERFACE ${ARGN})
endfunction()
