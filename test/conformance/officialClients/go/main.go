// Runs the shared contract cases (../cases.json) with the official Go client, unmodified
// (vendored under ../vendor/go), against a running service.
//
// usage: go run . BASE_ORIGIN API_KEY CASES_JSON
// Prints one JSON object per case: {"case", "status": "pass"|"fail"|"n/a", "detail"}.
// The only change is the one a user makes: the host, and the service's key header instead of
// X-Dune-Api-Key (a RoundTripper on http.DefaultClient, which the client uses).
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/duneanalytics/duneapi-client-go/config"
	"github.com/duneanalytics/duneapi-client-go/dune"
	"github.com/duneanalytics/duneapi-client-go/models"
)

type keyHeader struct{}

func (keyHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	if k := r.Header.Get("X-Dune-Api-Key"); k != "" {
		r.Header.Del("X-Dune-Api-Key")
		r.Header.Set("X-Service-Api-Key", k)
	}
	return http.DefaultTransport.RoundTrip(r)
}

type spec struct {
	Constants map[string]any `json:"constants"`
	Cases     []struct {
		ID string `json:"id"`
	} `json:"cases"`
}

var (
	c     dune.DuneClient
	k     map[string]any
	q     int
	exec  string
	table = "t_go"
	ex    string
)

func str(name string) string { return k[name].(string) }

func check(ok bool, format string, args ...any) {
	if !ok {
		panic(fmt.Sprintf(format, args...))
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err.Error())
	}
	return v
}

func wait(id string) *models.StatusResponse {
	for i := 0; i < 400; i++ {
		s := must(c.QueryStatus(id))
		if s.State != "QUERY_STATE_PENDING" && s.State != "QUERY_STATE_EXECUTING" {
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
	panic("the execution did not finish")
}

func runSQL(sql string) []map[string]any {
	e := must(c.RunSQL(models.ExecuteSQLRequest{SQL: sql}))
	r := must(e.WaitGetResults(50*time.Millisecond, 10))
	check(r.State == "QUERY_STATE_COMPLETED", "state %s", r.State)
	return r.Result.Rows
}

func params(who string) map[string]any { return map[string]any{"who": who} }

var cases = map[string]func(){
	"create_query": func() {
		opts := []string{}
		for _, o := range k["color_options"].([]any) {
			opts = append(opts, o.(string))
		}
		r := must(c.CreateQuery(models.CreateQueryRequest{Name: "official go", QuerySQL: str("query_sql"), Parameters: []models.QueryParameter{
			{Key: "who", Type: "text", Value: str("who_default")},
			{Key: "color", Type: "enum", Value: "red", EnumOptions: opts},
		}}))
		q = r.QueryID
		check(q > 0, "query_id %d", q)
	},
	"get_query": func() {
		r := must(c.GetQuery(q))
		check(r.Name == "official go" && r.QuerySQL == str("query_sql") && !r.IsTemp, "query %+v", r)
		check(len(r.Parameters) == 2 && strings.Join(r.Parameters[1].EnumOptions, ",") == "red,green", "parameters %+v", r.Parameters)
	},
	"update_query": func() {
		name := "renamed"
		must(c.UpdateQuery(q, models.UpdateQueryRequest{Name: &name}))
		check(must(c.GetQuery(q)).Name == "renamed", "not renamed")
	},
	"archive_query": func() {
		must(c.ArchiveQuery(q))
		check(must(c.GetQuery(q)).IsArchived, "not archived")
		f := false
		must(c.UpdateQuery(q, models.UpdateQueryRequest{IsArchived: &f}))
		check(!must(c.GetQuery(q)).IsArchived, "still archived")
	},
	"private_query": func() {
		t, f := true, false
		must(c.UpdateQuery(q, models.UpdateQueryRequest{IsPrivate: &t}))
		check(must(c.GetQuery(q)).IsPrivate, "not private")
		must(c.UpdateQuery(q, models.UpdateQueryRequest{IsPrivate: &f}))
		check(!must(c.GetQuery(q)).IsPrivate, "still private")
	},
	"execute_query": func() {
		r := must(c.QueryExecute(models.ExecuteRequest{QueryID: q, QueryParameters: params(str("who_value"))}))
		check(r.State == "QUERY_STATE_PENDING" && len(r.ExecutionID) == 26, "%+v", r)
		exec = r.ExecutionID
		wait(exec)
	},
	"execute_sql": func() {
		r := must(c.SQLExecute(models.ExecuteSQLRequest{SQL: "SELECT 1 AS one"}))
		check(len(r.ExecutionID) == 26, "%+v", r)
	},
	"execution_status": func() {
		s := must(c.QueryStatus(exec))
		check(s.State == "QUERY_STATE_COMPLETED" && s.ResultMetadata != nil && s.ResultMetadata.TotalRowCount == 5, "%+v", s)
	},
	"execution_results": func() {
		r := must(c.QueryResultsV2(exec, models.ResultOptions{Page: &models.ResultPageOption{Offset: 1, Limit: 2}}))
		check(len(r.Result.Rows) == 2 && r.Result.Rows[0]["i"] == float64(1) && r.Result.Rows[0]["who"] == str("who_value"), "%+v", r.Result.Rows)
	},
	"execution_results_csv": func() {
		text := string(must(io.ReadAll(must(c.QueryResultsCSV(exec)))))
		lines := strings.Split(strings.TrimSpace(text), "\n")
		check(lines[0] == "i,who,color" && len(lines) == 6, "%q", text)
	},
	"latest_results": func() {
		r := must(c.QueryResultsByQueryID(fmt.Sprint(q)))
		check(len(r.Result.Rows) == 5, "%d rows", len(r.Result.Rows))
	},
	"latest_results_csv": func() {
		text := string(must(io.ReadAll(must(c.QueryResultsCSVByQueryID(fmt.Sprint(q))))))
		check(len(strings.Split(strings.TrimSpace(text), "\n")) == 6, "%q", text)
	},
	"cancel_execution": func() {
		e := must(c.RunSQL(models.ExecuteSQLRequest{SQL: str("long_sql")}))
		check(e.Cancel() == nil, "cancel")
		s := must(e.GetStatus())
		check(s.State == "QUERY_STATE_CANCELLED" && s.CancelledAt != nil, "%+v", s)
		// The client's wait reads a cancelled execution's results once (no minute of retries).
		r := must(e.WaitGetResults(50*time.Millisecond, 2))
		check(r.State == "QUERY_STATE_CANCELLED", "%s", r.State)
	},
	"run_query": func() {
		rows := must(c.RunQueryGetRows(models.ExecuteRequest{QueryID: q, QueryParameters: params(str("who_value"))}))
		check(len(rows) == 5, "%d rows", len(rows))
	},
	"run_sql": func() {
		rows := runSQL("SELECT 2 AS two")
		check(len(rows) == 1 && rows[0]["two"] == float64(2), "%+v", rows)
	},
	"compressed_results": func() {
		rows := runSQL(str("compressed_sql"))
		sum := 0.0
		for _, r := range rows {
			sum += r["id"].(float64)
		}
		check(len(rows) == int(k["compressed_rows"].(float64)) && sum == k["compressed_id_sum"].(float64), "%d rows, sum %v", len(rows), sum)
	},
	"upload_csv": func() {
		r := must(c.UploadCSV(models.UploadsCSVRequest{TableName: "official_go", Data: "a,b\n1,2\n"}))
		check(r.Success && r.FullName == "service."+str("namespace")+".dataset_official_go", "%+v", r)
	},
	"usage": func() {
		u := must(c.GetUsage())
		check(len(u.BillingPeriods) == 1 && u.BillingPeriods[0].CreditsIncluded == 10000, "%+v", u)
	},
	"create_table": func() {
		r := must(c.CreateUpload(models.UploadsCreateRequest{Namespace: str("namespace"), TableName: table, Description: "by the go client", Schema: []models.UploadsColumn{
			{Name: "id", Type: "integer"}, {Name: "name", Type: "varchar", Nullable: true}, {Name: "value", Type: "double", Nullable: true},
		}}))
		check(r.FullName == "service."+str("namespace")+"."+table && r.ExampleQuery != "", "%+v", r)
		ex = r.ExampleQuery
	},
	"insert_csv": func() {
		r := must(c.InsertIntoUpload(str("namespace"), table, str("csv_rows"), "text/csv"))
		check(r.RowsWritten == 2 && r.BytesWritten == int64(len(str("csv_rows"))), "%+v", r)
	},
	"insert_ndjson": func() {
		r := must(c.InsertIntoUpload(str("namespace"), table, str("ndjson_rows"), "application/x-ndjson"))
		check(r.RowsWritten == 1, "%+v", r)
	},
	"query_uploaded": func() {
		rows := runSQL(ex)
		check(len(rows) == 3, "%+v", rows)
	},
	"list_uploads": func() {
		found := false
		for _, t := range must(c.ListUploads(50, 0)).Tables {
			if strings.HasSuffix(t.FullName, "."+table) {
				found = t.TableSizeBytes != "" && t.TableSizeBytes != "0" && len(t.Columns) == 3
			}
		}
		check(found, "not listed")
	},
	"list_datasets": func() {
		r := must(c.ListDatasets(50, 0, "", "uploaded_table"))
		found := false
		for _, d := range r.Datasets {
			found = found || d.FullName == "service."+str("namespace")+"."+table
		}
		check(found && r.Total >= 1, "%+v", r)
	},
	"get_dataset": func() {
		d := must(c.GetDataset("service." + str("namespace") + "." + table))
		check(d.HasError() == nil && len(d.Columns) == 3 && d.Columns[0].Name == "id", "%+v", d)
	},
	"search_datasets": func() {
		word := table
		r := must(c.SearchDatasets(models.SearchDatasetsRequest{Query: &word}))
		check(r.Total == 1 && len(r.Results) == 1 && r.Results[0].FullName == "service."+str("namespace")+"."+table, "%+v", r)
	},
	"clear_table": func() {
		must(c.ClearUpload(str("namespace"), table))
		check(len(runSQL(ex)) == 0, "rows after clear")
	},
	"delete_table": func() {
		must(c.DeleteUpload(str("namespace"), table))
		for _, t := range must(c.ListUploads(50, 0)).Tables {
			check(!strings.HasSuffix(t.FullName, "."+table), "still listed")
		}
	},
}

func report(id, status, detail string) {
	b, _ := json.Marshal(map[string]string{"case": id, "status": status, "detail": detail})
	fmt.Println(string(b))
}

func main() {
	http.DefaultClient.Transport = keyHeader{}
	c = dune.NewDuneClient(&config.Env{APIKey: os.Args[2], Host: os.Args[1]})
	var s spec
	check(json.Unmarshal(must(os.ReadFile(os.Args[3])), &s) == nil, "cases file")
	k = s.Constants
	for _, cs := range s.Cases {
		fn, ok := cases[cs.ID]
		if !ok {
			report(cs.ID, "n/a", "the client has no call for it")
			continue
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					report(cs.ID, "fail", fmt.Sprint(r))
				}
			}()
			fn()
			report(cs.ID, "pass", "")
		}()
	}
}
