import LedgerQueries

extension JSONAnswer {
    /// A query parameter naming no category, location or item, or several (`FilterResolution`, as the
    /// CLI resolves it): 400 `unknown_<field>` / `ambiguous_<field>` in the one error shape, with the
    /// nearest names or the candidates as the hint; never an empty answer.
    static func filterValue(_ error: FilterValueError, parameter: String) -> JSONAnswer {
        .error(400, error.code, "\(parameter)=\(error.value): \(error.message)", hint: error.hint)
    }
}
