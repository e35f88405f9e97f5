package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/operations"
)

// incidentView is an incident as the console shows it.
type incidentView struct {
	ID, Key, Kind, What, LastProbe, ClosedBy string
	Since, OpenedAt, LastProbeAt, ClosedAt   string
	Open                                     bool
	Held, Probes                             int
	Operations                               []string
	// Options are the decisions offered on an open incident.
	Options []incidentOption
}

type incidentOption struct{ ID, Label string }

func viewIncident(inc *pollwarden.Incident) incidentView {
	v := incidentView{ID: clean(inc.ID), Key: clean(inc.Key), Kind: string(inc.Kind), What: clean(inc.What),
		LastProbe: clean(inc.LastProbe), ClosedBy: clean(inc.ClosedBy), Since: clock(inc.Since), OpenedAt: clock(inc.OpenedAt),
		Open: inc.Open(), Held: inc.Held, Probes: inc.Probes}
	for _, id := range inc.Operations {
		v.Operations = append(v.Operations, clean(id))
	}
	if inc.LastProbeAt != nil {
		v.LastProbeAt = clock(*inc.LastProbeAt)
	}
	if inc.ClosedAt != nil {
		v.ClosedAt = clock(*inc.ClosedAt)
	}
	if v.Open {
		if inc.Kind == pollwarden.IncidentCredential {
			v.Options = append(v.Options, incidentOption{pollwarden.OptionRetryCredential,
				"Retry with the changed credential: each held operation resumes; refused while the credential is the one the provider refused"})
		}
		v.Options = append(v.Options, incidentOption{pollwarden.OptionAbandon, "Abandon every operation the incident holds"})
	}
	return v
}

// openIncidents lists the open incidents for the queue; none for a
// viewer who may not read them, or when they cannot be read (the queue
// beats no queue).
func (c *Console) openIncidents(r *http.Request, v viewer) []incidentView {
	list, err := c.ops.Incidents(r.Context(), operations.Caller{Caller: v.Caller}, true, "")
	if err != nil {
		return nil
	}
	out := make([]incidentView, 0, len(list))
	for _, inc := range list {
		out = append(out, viewIncident(inc))
	}
	return out
}

// incidents is the page /ui/incidents: every incident, open ones first.
func (c *Console) incidents(w http.ResponseWriter, r *http.Request) {
	v, ok := c.who(r)
	if !ok {
		c.signinPage(w, r, http.StatusUnauthorized, "Sign in to see the provider incidents.")
		return
	}
	list, err := c.ops.Incidents(r.Context(), operations.Caller{Caller: v.Caller}, false, "")
	if operations.KindOf(err) == operations.Forbidden {
		c.fail(w, r, http.StatusForbidden, "Provider incidents are for approvers.")
		return
	}
	if err != nil {
		c.internal(w, r, err)
		return
	}
	views := make([]incidentView, 0, len(list))
	for _, inc := range list {
		views = append(views, viewIncident(inc))
	}
	c.render(w, r, http.StatusOK, "incidents", map[string]any{"Viewer": v, "Incidents": views})
}

// incident is one incident's page: what failed, since when, how many
// operations it holds, the probe's last answer, and the decision forms.
func (c *Console) incident(w http.ResponseWriter, r *http.Request) {
	v, ok := c.who(r)
	if !ok {
		c.signinPage(w, r, http.StatusUnauthorized, "Sign in to see this incident.")
		return
	}
	c.showIncident(w, r, v, http.StatusOK, "", r.URL.Query().Get("decided"))
}

func (c *Console) showIncident(w http.ResponseWriter, r *http.Request, v viewer, status int, problem, decided string) {
	id := r.PathValue("id")
	inc, err := c.ops.Incident(r.Context(), operations.Caller{Caller: v.Caller}, id)
	switch operations.KindOf(err) {
	case operations.NotFound, operations.Invalid:
		c.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no incident %s.", clean(id)))
		return
	case operations.Forbidden:
		c.fail(w, r, http.StatusForbidden, "Provider incidents are for approvers.")
		return
	}
	if err != nil {
		c.internal(w, r, err)
		return
	}
	c.render(w, r, status, "incident", map[string]any{"Viewer": v, "Incident": viewIncident(inc), "Problem": problem, "Decided": clean(decided)})
}

// decideIncident applies an approver's answer to every operation the
// incident holds, through the use case, then shows the incident again.
func (c *Console) decideIncident(w http.ResponseWriter, r *http.Request) {
	v, ok := c.approverPost(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	option := r.PostFormValue("option")
	_, err := c.ops.DecideIncident(r.Context(), operations.IncidentDecisionParams{Caller: operations.Caller{Caller: v.Caller}, ID: id,
		Option: option, Note: strings.TrimSpace(r.PostFormValue("note"))})
	if err != nil {
		status, msg := refusal(err)
		if status == http.StatusInternalServerError {
			c.log.ErrorContext(r.Context(), "console incident decision failed", "incident", id, "error", err)
		}
		if status == http.StatusNotFound {
			c.fail(w, r, status, fmt.Sprintf("There is no incident %s.", clean(id)))
			return
		}
		c.showIncident(w, r, v, status, msg, "")
		return
	}
	http.Redirect(w, r, "/ui/incidents/"+url.PathEscape(id)+"?decided="+url.QueryEscape(option), http.StatusSeeOther)
}
