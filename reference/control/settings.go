package control

import (
	"errors"
	"net/http"
	"time"

	"github.com/mcpconform/mcpconform/drivers/control/controlapi"
	"github.com/mcpconform/mcpconform/reference/gateway"
)

func settingsJSON(s gateway.Settings) controlapi.Settings {
	return controlapi.Settings{
		WindowSeconds:          s.Window.Seconds(),
		PermitTTLSeconds:       s.PermitTTL.Seconds(),
		EffectiveWindowSeconds: s.EffectiveWindow().Seconds(),
		StaleLockSeconds:       s.StaleLock.Seconds(),
		LockTimeout:            controlapi.Duration(s.LockTimeout),
		RetentionSeconds:       s.Retention.Seconds(),
	}
}

func (a *api) getSettings(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, settingsJSON(a.c.Gateway.Settings()))
	return nil
}

func (a *api) putSettings(w http.ResponseWriter, r *http.Request) error {
	var req controlapi.SettingsPatch
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
	if err := set("window_seconds", req.WindowSeconds, &s.Window); err != nil {
		return err
	}
	if err := set("permit_ttl_seconds", req.PermitTTLSeconds, &s.PermitTTL); err != nil {
		return err
	}
	if err := set("stale_lock_seconds", req.StaleLockSeconds, &s.StaleLock); err != nil {
		return err
	}
	if err := set("retention_seconds", req.RetentionSeconds, &s.Retention); err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return fail(http.StatusBadRequest, "invalid_setting", "%v", err)
	}
	if err := s.CheckTimes(a.c.Clock.Now()); err != nil {
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
