// Starts Swagger UI on this service's OpenAPI document (host/src/api/docs.rs).
// It is a file and not an inline script so that the page's
// Content-Security-Policy can refuse every inline script. No validator:
// Swagger UI would otherwise send the document to a public one.
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/api/v1/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
});
