package httpapi

import (
	"net/http"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/internal/display"
	"github.com/pollwarden/pollwarden/operations"
)

// incidentList wraps the incidents so fields can be added later.
type incidentList struct {
	Incidents []*pollwarden.Incident `json:"incidents"`
}

// incidents answers the provider incidents, open ones first (?open=true:
// only those), each with the operations it holds counted now.
func (a *api) incidents(w http.ResponseWriter, r *http.Request, _ pollwarden.Actor) error {
	q := r.URL.Query()
	open := false
	switch v := q.Get("open"); v {
	case "", "false":
	case "true":
		open = true
	default:
		return unprocessable("open %s: want true or false", display.Clip(v))
	}
	list, err := a.ops.Incidents(r.Context(), callerOf(r), open, q.Get("limit"))
	if err != nil {
		return problem(err)
	}
	if list == nil {
		list = []*pollwarden.Incident{}
	}
	writeJSON(w, http.StatusOK, incidentList{Incidents: list})
	return nil
}

// incident answers one incident.
func (a *api) incident(w http.ResponseWriter, r *http.Request, _ pollwarden.Actor) error {
	inc, err := a.ops.Incident(r.Context(), callerOf(r), r.PathValue("id"))
	if err != nil {
		return problem(err)
	}
	writeJSON(w, http.StatusOK, inc)
	return nil
}

// incidentDecisionRequest is the body of POST /v1/incidents/{id}/decisions.
type incidentDecisionRequest struct {
	Option string `json:"option"`
	Note   string `json:"note,omitempty"`
}

// decideIncident applies an approver's answer to every operation an
// incident holds, and closes it: 409 when it is closed, or for
// retry_credential when the credential is still the refused one.
func (a *api) decideIncident(w http.ResponseWriter, r *http.Request, _ pollwarden.Actor) error {
	var req incidentDecisionRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	d, err := a.ops.DecideIncident(r.Context(), operations.IncidentDecisionParams{Caller: callerOf(r), ID: r.PathValue("id"),
		Option: req.Option, Note: req.Note})
	if err != nil {
		return problem(err)
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}
