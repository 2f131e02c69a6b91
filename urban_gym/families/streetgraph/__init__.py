"""StreetGraph: long-range navigation on a Street-View intersection graph (after CityNav
and Touchdown).
"""
