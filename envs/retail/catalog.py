"""The Retail world's fixed vocabulary: product types with their options, and
the names, streets and cities users are drawn from.

Everything is ASCII. Names come from small pools on purpose, so several users
share a first and last name (and differ in zip code and email): an agent has to
authenticate with all three, not guess from a name. No option value contains a
word the simulated user listens for ("zip", "email", "order number", ...).
"""

from __future__ import annotations

__all__ = ["CITIES", "FIRST_NAMES", "LAST_NAMES", "PRODUCTS", "STREETS", "COLORS"]

COLORS = ("black", "white", "blue", "red", "green", "gray")

#: name -> (option name -> values, base price in dollars)
PRODUCTS: dict[str, tuple[dict[str, tuple[str, ...]], float]] = {
    "T-Shirt": (
        {"color": COLORS, "size": ("S", "M", "L", "XL"), "material": ("cotton", "polyester")},
        25.0,
    ),
    "Hiking Boots": (
        {
            "size": ("7", "8", "9", "10", "11", "12"),
            "material": ("leather", "synthetic"),
            "waterproof": ("yes", "no"),
        },
        180.0,
    ),
    "Desk Lamp": (
        {
            "color": ("black", "white", "silver"),
            "brightness": ("low", "medium", "high"),
            "power source": ("AC adapter", "USB", "battery"),
        },
        90.0,
    ),
    "Backpack": (
        {
            "color": ("black", "grey", "navy", "green"),
            "size": ("small", "medium", "large"),
            "material": ("nylon", "leather", "polyester"),
        },
        120.0,
    ),
    "Water Bottle": (
        {
            "capacity": ("500ml", "750ml", "1000ml"),
            "material": ("stainless steel", "plastic", "glass"),
            "color": ("black", "white", "blue", "red"),
        },
        30.0,
    ),
    "Running Shoes": (
        {
            "size": ("7", "8", "9", "10", "11"),
            "color": ("black", "white", "red", "yellow"),
            "sole": ("rubber", "EVA", "foam"),
        },
        140.0,
    ),
    "Wireless Earbuds": (
        {
            "color": ("black", "white", "blue"),
            "battery life": ("4 hours", "6 hours", "8 hours"),
            "water resistance": ("IPX4", "IPX7", "not resistant"),
        },
        130.0,
    ),
    "Office Chair": (
        {
            "material": ("leather", "fabric", "mesh"),
            "color": ("black", "gray", "blue"),
            "armrest": ("none", "fixed", "adjustable"),
        },
        320.0,
    ),
    "Coffee Maker": (
        {
            "color": ("black", "stainless steel", "white"),
            "capacity": ("1 cup", "4 cups", "8 cups", "12 cups"),
            "type": ("drip", "espresso", "french press"),
        },
        160.0,
    ),
    "Laptop": (
        {
            "screen size": ("13-inch", "15-inch", "17-inch"),
            "processor": ("i5", "i7", "i9"),
            "ram": ("8GB", "16GB", "32GB"),
            "storage": ("256GB SSD", "512GB SSD", "1TB SSD"),
        },
        1400.0,
    ),
    "Smart Watch": (
        {
            "color": ("black", "silver", "gold"),
            "band material": ("silicone", "leather", "metal"),
            "display": ("LCD", "AMOLED"),
        },
        260.0,
    ),
    "Bookshelf": (
        {
            "material": ("wood", "metal", "glass"),
            "color": ("brown", "white", "black"),
            "height": ("3 ft", "4 ft", "5 ft", "6 ft"),
        },
        210.0,
    ),
    "Yoga Mat": (
        {
            "thickness": ("4mm", "6mm", "8mm"),
            "material": ("PVC", "TPE", "natural rubber"),
            "color": ("green", "pink", "blue", "purple"),
        },
        45.0,
    ),
    "Headphones": (
        {
            "type": ("over-ear", "on-ear", "in-ear"),
            "connectivity": ("wired", "wireless"),
            "color": ("black", "white", "red"),
        },
        150.0,
    ),
    "Mechanical Keyboard": (
        {
            "switch type": ("linear", "tactile", "clicky"),
            "backlight": ("none", "white", "RGB"),
            "layout": ("60%", "80%", "full size"),
        },
        130.0,
    ),
    "Electric Kettle": (
        {
            "capacity": ("1L", "1.5L", "2L"),
            "material": ("stainless steel", "plastic", "glass"),
            "color": ("black", "white", "silver"),
        },
        60.0,
    ),
    "Sunglasses": (
        {
            "frame color": ("black", "brown", "silver"),
            "lens color": ("green", "brown", "black", "blue"),
            "lens type": ("polarized", "non-polarized"),
        },
        110.0,
    ),
    "Jigsaw Puzzle": (
        {
            "pieces": ("500", "1000", "1500", "2000"),
            "theme": ("animals", "art", "landscape", "fantasy"),
            "level": ("beginner", "intermediate", "expert"),
        },
        35.0,
    ),
    "Skateboard": (
        {
            "deck material": ("maple", "bamboo", "plastic"),
            "length": ("28 inch", "31 inch", "34 inch"),
            "design": ("plain", "graphic", "custom"),
        },
        95.0,
    ),
    "Action Camera": (
        {
            "resolution": ("1080p", "4K", "5K"),
            "waterproof": ("yes", "no"),
            "color": ("black", "silver"),
        },
        310.0,
    ),
    "Garden Hose": (
        {
            "length": ("25ft", "50ft", "100ft"),
            "material": ("rubber", "vinyl", "latex"),
            "color": ("green", "blue", "black"),
        },
        55.0,
    ),
    "Perfume": (
        {
            "scent family": ("woody", "fresh", "floral", "oriental"),
            "size": ("30ml", "50ml", "100ml"),
            "gender": ("men", "women", "unisex"),
        },
        85.0,
    ),
    "Air Purifier": (
        {
            "room size": ("small", "medium", "large"),
            "filter type": ("HEPA", "carbon", "ionic"),
            "features": ("quiet operation", "smart sensors", "night mode"),
        },
        240.0,
    ),
    "Vacuum Cleaner": (
        {
            "type": ("upright", "canister", "robotic"),
            "bag type": ("bagged", "bagless"),
            "features": ("HEPA filter", "pet hair removal", "cordless"),
        },
        280.0,
    ),
    "Bicycle": (
        {
            "frame size": ("small", "medium", "large"),
            "color": ("black", "red", "blue", "green"),
            "type": ("road", "mountain", "city"),
        },
        950.0,
    ),
    "Fleece Jacket": (
        {
            "size": ("S", "M", "L", "XL"),
            "color": ("black", "navy", "red", "gray"),
            "fit": ("regular", "relaxed"),
        },
        120.0,
    ),
    "Wall Clock": (
        {
            "diameter": ("10 inches", "12 inches", "14 inches"),
            "color": ("black", "white", "wood"),
            "type": ("analog", "digital"),
        },
        50.0,
    ),
    "Cycling Helmet": (
        {
            "size": ("S", "M", "L"),
            "color": ("black", "white", "red", "blue"),
            "ventilation": ("low", "medium", "high"),
        },
        75.0,
    ),
    "Pet Bed": (
        {
            "size": ("small", "medium", "large"),
            "material": ("memory foam", "polyester", "fleece"),
            "color": ("brown", "grey", "beige"),
        },
        70.0,
    ),
    "Notebook": (
        {
            "size": ("A4", "A5", "A6"),
            "cover type": ("hard cover", "soft cover"),
            "paper": ("lined", "dotted", "blank"),
        },
        15.0,
    ),
    "Security Camera": (
        {
            "resolution": ("720p", "1080p", "2K", "4K"),
            "field of view": ("100 degrees", "130 degrees", "160 degrees"),
            "connectivity": ("Wi-Fi", "Ethernet"),
        },
        150.0,
    ),
    "Grill": (
        {
            "type": ("gas", "charcoal", "electric"),
            "size": ("portable", "medium", "large"),
            "features": ("side burner", "rotisserie", "none"),
        },
        420.0,
    ),
}

FIRST_NAMES = (
    "Mia", "Noah", "Olivia", "Liam", "Emma", "Ethan", "Sofia", "Lucas", "Ava", "Yusuf",
    "Amelia", "Omar", "Isabella", "Mei", "Chen", "Fatima", "Raj", "Aarav", "Lei", "Ivan",
    "Anya", "Daiki", "Harper", "Mateo",
)  # fmt: skip
LAST_NAMES = (
    "Garcia", "Smith", "Kim", "Nguyen", "Patel", "Lopez", "Rossi", "Muller", "Silva", "Cohen",
    "Ahmed", "Wilson", "Sato", "Brown", "Ito", "Khan", "Moore", "Johansson", "Hernandez",
    "Li",
)  # fmt: skip
STREETS = (
    "Oak", "Maple", "Cedar", "Elm", "Pine", "Willow", "Lake", "Hill", "River", "Sunset",
    "Park", "Main", "Broadway", "Highland", "Chestnut", "Spruce", "Laurel", "Cherry",
    "Walnut", "Forest",
)  # fmt: skip
STREET_KINDS = ("Street", "Avenue", "Road", "Lane", "Drive", "Court", "Place")
#: (city, state, first three digits of its zip codes)
CITIES = (
    ("Austin", "TX", "787"),
    ("Houston", "TX", "770"),
    ("Denver", "CO", "802"),
    ("Seattle", "WA", "981"),
    ("Portland", "OR", "972"),
    ("Phoenix", "AZ", "850"),
    ("Chicago", "IL", "606"),
    ("Boston", "MA", "021"),
    ("New York", "NY", "100"),
    ("San Diego", "CA", "921"),
    ("San Francisco", "CA", "941"),
    ("Philadelphia", "PA", "191"),
    ("Charlotte", "NC", "282"),
    ("Columbus", "OH", "432"),
    ("Fort Worth", "TX", "761"),
    ("Jacksonville", "FL", "322"),
    ("Nashville", "TN", "372"),
    ("Minneapolis", "MN", "554"),
)
CARD_BRANDS = ("visa", "mastercard", "amex", "discover")
COURIERS = ("UPS", "FedEx", "USPS", "DHL")
