package caddymodule

import (
	"log/slog"
	"net"
	"slices"
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// announceListeners logs the URLs this handler answers on, once the config's servers are
// listening ("started" event). Caddy's own logs name servers, not URLs; a newcomer running
// `make run` should see "http://127.0.0.1:4310" in plain words.
func announceListeners(ctx caddy.Context, h *Harness) {
	app, err := ctx.App("http")
	if err != nil {
		return
	}
	httpApp, ok := app.(*caddyhttp.App)
	if !ok {
		return
	}
	for _, url := range handlerURLs(httpApp, h) {
		h.logger.Info("Harness Runtime API listening on "+url, slog.String("url", url), slog.String("store", h.storeKey))
		announceConsole(h, url)
	}
}

// handlerURLs lists the base URLs of the servers whose routes lead to h.
func handlerURLs(app *caddyhttp.App, h *Harness) []string {
	var urls []string
	for _, srv := range app.Servers {
		hosts, found := routesLeadTo(srv.Routes, h, nil)
		if !found {
			continue
		}
		scheme, defaultPort := "http", uint(80)
		if len(srv.TLSConnPolicies) > 0 {
			scheme, defaultPort = "https", 443
		}
		for _, listen := range srv.Listen {
			addr, err := caddy.ParseNetworkAddress(listen)
			if err != nil {
				continue
			}
			if addr.IsUnixNetwork() {
				urls = append(urls, scheme+"+unix://"+addr.Host)
				continue
			}
			// The site's names when it has some (they are what its certificate covers), else
			// the address it binds to.
			names := hosts
			if len(names) == 0 {
				name := addr.Host
				if name == "" {
					name = "localhost"
				}
				names = []string{name}
			}
			for port := addr.StartPort; port <= addr.EndPort; port++ {
				for _, name := range names {
					urls = append(urls, scheme+"://"+hostPort(name, port, defaultPort))
				}
			}
		}
	}
	slices.Sort(urls)
	return slices.Compact(urls)
}

// hostPort joins a host name and a port, leaving out the scheme's default port.
func hostPort(name string, port, defaultPort uint) string {
	if port != defaultPort {
		return net.JoinHostPort(name, strconv.FormatUint(uint64(port), 10))
	}
	if ip := net.ParseIP(name); ip != nil && ip.To4() == nil {
		return "[" + name + "]"
	}
	return name
}

// routesLeadTo reports whether h is among the handlers of routes (subroutes included), and the
// host names the enclosing routes match on.
func routesLeadTo(routes caddyhttp.RouteList, h *Harness, hosts []string) ([]string, bool) {
	for _, route := range routes {
		routeHosts := hosts
		for _, set := range route.MatcherSets {
			for _, matcher := range set {
				switch m := matcher.(type) {
				case caddyhttp.MatchHost:
					routeHosts = append(slices.Clip(routeHosts), m...)
				case *caddyhttp.MatchHost:
					routeHosts = append(slices.Clip(routeHosts), *m...)
				}
			}
		}
		for _, handler := range route.Handlers {
			if handler == h {
				return routeHosts, true
			}
			if sub, ok := handler.(*caddyhttp.Subroute); ok {
				if found, ok := routesLeadTo(sub.Routes, h, routeHosts); ok {
					return found, true
				}
			}
		}
	}
	return nil, false
}
