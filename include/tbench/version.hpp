#pragma once

namespace tbench {
// The tbench release and the git revision it was built from (generated at configure time).
const char* version();
const char* git_sha();
}  // namespace tbench
