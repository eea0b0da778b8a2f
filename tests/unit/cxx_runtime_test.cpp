// The process takes the C++ runtime's symbols from libstdc++, not from the copies that pip's
// LibTorch carries: torch 2.x wheels export a static std::filesystem of their own, and with LibTorch
// first in the executable's DT_NEEDED every std::filesystem call bound to it (torch 2.11's
// remove_all() crashed on a null pointer there). CMakeLists.txt names libstdc++ first on each link.
#include <dlfcn.h>
#include <link.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tbench {
namespace {

// The shared objects of this process in the dynamic linker's search order (the executable first).
std::vector<std::string> objects_in_search_order() {
  std::vector<std::string> names;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        static_cast<std::vector<std::string>*>(out)->push_back(info->dlpi_name ? info->dlpi_name : "");
        return 0;
      },
      &names);
  return names;
}

std::ptrdiff_t index_of_first_object_named(const std::vector<std::string>& names, const std::vector<std::string>& parts) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    for (const auto& part : parts) {
      if (names[i].find(part) != std::string::npos) return static_cast<std::ptrdiff_t>(i);
    }
  }
  return -1;
}

std::string search_order_text(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += "  " + n + "\n";
  return out;
}

TEST(Runtime, LibstdcxxIsSearchedBeforeLibTorch) {
  const auto names = objects_in_search_order();
  const auto cxx = index_of_first_object_named(names, {"libstdc++"});
  const auto torch = index_of_first_object_named(names, {"libtorch", "libc10"});
  if (cxx < 0) GTEST_SKIP() << "not linked against libstdc++:\n" << search_order_text(names);
  ASSERT_GE(torch, 0) << search_order_text(names);
  EXPECT_LT(cxx, torch) << "libstdc++ must come before LibTorch in the search order:\n" << search_order_text(names);
}

TEST(Runtime, StdFilesystemComesFromTheCxxRuntime) {
  // std::filesystem::remove_all(const path&, error_code&), in each string ABI's mangling.
  void* symbol = dlsym(RTLD_DEFAULT, "_ZNSt10filesystem10remove_allERKNS_7__cxx114pathERSt10error_code");
  if (!symbol) symbol = dlsym(RTLD_DEFAULT, "_ZNSt10filesystem10remove_allERKNS_4pathERSt10error_code");
  if (!symbol) GTEST_SKIP() << "no shared object exports std::filesystem (a static libstdc++fs, or libc++)";
  Dl_info where{};
  ASSERT_NE(dladdr(symbol, &where), 0);
  const std::string file = where.dli_fname ? where.dli_fname : "";
  EXPECT_NE(file.find("libstdc++"), std::string::npos) << "std::filesystem::remove_all resolves to " << file;
}

}  // namespace
}  // namespace tbench
