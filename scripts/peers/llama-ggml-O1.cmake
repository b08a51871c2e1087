# Included by CMake right after ggml's project() (scripts/setup-peers.sh passes it as
# CMAKE_PROJECT_ggml_INCLUDE): ggml's kernels, which do the model's arithmetic, build at -O1,
# while the rest of llama.cpp (the server, common, llama's model code), most of the compile
# time, builds at the -O0 set on the command line.
set(CMAKE_C_FLAGS_RELEASE "-O1 -DNDEBUG")
set(CMAKE_CXX_FLAGS_RELEASE "-O1 -DNDEBUG")
