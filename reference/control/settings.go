package control

import (
	"errors"
	"net/http"
	"time"

	"github.com/mcpconform/mcpconform/reference/gateway"
)

func seconds(d time.Duration) float64 { return d.Seconds() }

func settingsJSON(s gateway.Settings) map[string]any {
	return map[string]any{
		"window_seconds":           seconds(s.Window),
		"permit_ttl_seconds":       seconds(s.PermitTTL),
		"effective_window_seconds": seconds(s.EffectiveWindow()),
		"stale_lock_seconds":       seconds(s.StaleLock),
		"lock_timeout":             s.LockTimeout.String(),
	}
}

func (a *api) getSettings(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, settingsJSON(a.c.Gateway.Settings()))
	return nil
}

func (a *api) putSettings(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Window    *float64 `json:"window_seconds"`
		PermitTTL *float64 `json:"permit_ttl_seconds"`
		StaleLock *float64 `json:"stale_lock_seconds"`
	}
	if err := decode(r, &req); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.reason == "bad_request" {
			ae.reason = "invalid_setting"
		}
		return err
	}
	s := a.c.Gateway.Settings()
	set := func(name string, v *float64, d *time.Duration) error {
		if v == nil {
			return nil
		}
		dur, err := gateway.SettingDuration(name, *v)
		if err != nil {
			return fail(http.StatusBadRequest, "invalid_setting", "%v", err)
		}
		*d = dur
		return nil
	}
	if err := set("window_seconds", req.Window, &s.Window); err != nil {
		return err
	}
	if err := set("permit_ttl_seconds", req.PermitTTL, &s.PermitTTL); err != nil {
		return err
	}
	if err := set("stale_lock_seconds", req.StaleLock, &s.StaleLock); err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return fail(http.StatusBadRequest, "invalid_setting", "%v", err)
	}
	if err := a.c.Gateway.SetSettings(s); err != nil {
		return fail(http.StatusBadRequest, "invalid_setting", "%v", err)
	}
	writeJSON(w, http.StatusOK, settingsJSON(a.c.Gateway.Settings()))
	return nil
}

func (a *api) resetSettings(w http.ResponseWriter, r *http.Request) error {
	a.c.Gateway.ResetSettings()
	w.WriteHeader(http.StatusNoContent)
	return nil
}
