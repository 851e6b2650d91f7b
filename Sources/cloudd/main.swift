print("cloudd arrives with the cloud issue")
