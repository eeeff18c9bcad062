#include "dataplane/offload.h"

namespace dp {

namespace {

// Everything stays in software.
class NoneProvider final : public OffloadProvider {
 public:
  const char* name() const override { return "none"; }
};

}  // namespace

Result<std::unique_ptr<OffloadProvider>> make_offload_provider(const OffloadConfig& cfg) {
  if (cfg.provider == "none") return std::unique_ptr<OffloadProvider>(new NoneProvider());
  if (cfg.provider == "auto") return std::unique_ptr<OffloadProvider>(new NoneProvider());
  return Status::error("offload provider '" + cfg.provider + "' is not built into this dataplane yet");
}

}  // namespace dp
