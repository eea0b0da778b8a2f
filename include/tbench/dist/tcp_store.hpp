#pragma once
// The rendezvous store (c10d::TCPStore), opened the way every supported LibTorch accepts.
#include <string>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

namespace tbench {

// torch >= 2.4 asks for the libuv store by default, and a LibTorch built without libuv (Debian's)
// refuses that outright. The classic store speaks the same protocol, so it takes over there.
c10::intrusive_ptr<c10d::TCPStore> open_tcp_store(const std::string& host, c10d::TCPStoreOptions options);

}  // namespace tbench
