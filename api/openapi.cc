#include "api/jobs_api.h"

namespace tpujobs::api {
namespace openapi_files {
std::string_view find(std::string_view name);
}

std::string_view openapi_document() { return openapi_files::find("openapi.json"); }

}  // namespace tpujobs::api
