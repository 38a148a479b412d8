// POST /v1/datasets: a CSV file stored as a dataset to train on.
#include "api/jobs_api.h"
#include "api/problem.h"
#include "api/request_reading.h"

namespace tpujobs::api {
namespace {

using nlohmann::json;

constexpr const char* kCsvCurl =
    "curl -H 'Content-Type: text/csv' --data-binary @data.csv "
    "'localhost:8080/v1/datasets?name=mydata'";

}  // namespace

void JobsApi::add_dataset_routes() {
  router_.add(
      "POST", "/v1/datasets", Access::kTenant,
      [this](Request& r, const PathParams&, ResponseWriterPtr w) {
        if (r.body.empty()) {
          w->respond(
              problem(400, "the request body is empty; send the CSV file", {{"hint", kCsvCurl}}));
          return;
        }
        if (const std::string_view type = r.header("content-type"); !declares_csv(type)) {
          w->respond(problem(
              415, "the body is sent as '" + shown_type(type) + "'; this route reads a CSV file",
              {{"field", "Content-Type"},
               {"hint", std::string("send the file as it is with the header Content-Type: "
                                    "text/csv (curl -d strips its newlines and curl -F "
                                    "wraps it in a form), e.g. ") +
                            kCsvCurl}}));
          return;
        }
        // The name is storable text already (utf8_query).
        const std::string name = r.query_value("name").value_or("upload");
        if (name.size() > 128) {
          w->respond(problem(400, "the query parameter 'name' is longer than 128 bytes",
                             {{"field", "name"}, {"hint", "e.g. ?name=mydata"}}));
          return;
        }
        if (name.empty() || control_character(name)) {
          w->respond(
              problem(400, "the query parameter 'name' is empty or holds a control character",
                      {{"field", "name"},
                       {"hint", "a name is one line of printable text, e.g. ?name=mydata"}}));
          return;
        }
        if (!storable_text(r.body)) {
          w->respond(problem(422,
                             "the CSV file is not UTF-8 text, or contains the character U+0000",
                             {{"field", "body"}, {"hint", "save the file as UTF-8 CSV"}}));
          return;
        }
        std::optional<std::optional<std::string>> read_key = read_idempotency_key(r, w);
        if (!read_key) return;
        const std::optional<std::string>& key = *read_key;
        base::Result<JobService::UploadedDataset> uploaded = service_.upload_dataset(
            {r.tenant, name, r.body, key, key ? content_hash(r.body) : std::string()});
        if (!uploaded.ok() && uploaded.code() == base::ErrorCode::kConflict) {
          w->respond(problem(409, uploaded.error().message,
                             {{"field", "Idempotency-Key"},
                              {"hint",
                               "an Idempotency-Key names one upload of one file; use a new key for "
                               "another file or name"}}));
          return;
        }
        if (!uploaded.ok()) {
          w->respond(answer(base::Result<nlohmann::json>(uploaded.error())));
          return;
        }
        w->respond(json_response(uploaded->existing ? 200 : 201, uploaded->dataset));
      });
}

}  // namespace tpujobs::api
